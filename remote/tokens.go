package remote

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// tokens maps the call tokens of WRAP listeners to the rest of the chain, so
// that the plugin's Host.Next continues the host's chain where it is. A token
// lives exactly as long as the listener's RPC.
type tokens struct {
	seq atomic.Uint64
	m   sync.Map // string → nextFunc
}

// nextFunc continues the chain; nil means it may no longer (the
// listener's budget ran out).
type nextFunc func(ctx context.Context) *pb.NextResponse

func (t *tokens) add(next nextFunc) string {
	tok := "t" + strconv.FormatUint(t.seq.Add(1), 36)
	t.m.Store(tok, next)
	return tok
}

func (t *tokens) remove(tok string) { t.m.Delete(tok) }

func (t *tokens) get(tok string) (nextFunc, bool) {
	v, ok := t.m.Load(tok)
	if !ok {
		return nil, false
	}
	return v.(nextFunc), true
}
