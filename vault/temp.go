package vault

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Short-lived records (a consent waiting for its browser, and how it
// ended) are kept where every replica finds them when the records are: in
// Redis, sealed as the tokens are and expiring by themselves. A file
// store has none: one host keeps them in memory.

// TempStore keeps short-lived sealed records shared by replicas.
type TempStore interface {
	PutTemp(ctx context.Context, key string, sealed []byte, ttl time.Duration) error
	// TakeTemp gets and deletes a record at once: of two replicas taking
	// the same record, one gets it.
	TakeTemp(ctx context.Context, key string) ([]byte, bool, error)
	GetTemp(ctx context.Context, key string) ([]byte, bool, error)
}

// ErrNotShared is the error of a temporary record in a vault whose store
// is not shared.
var ErrNotShared = errors.New("the vault's store is not shared by replicas")

// Shared reports whether the vault's store is shared by replicas and keeps
// temporary records.
func (v *Vault) Shared() bool {
	_, ok := v.store.(TempStore)
	return ok
}

// tempAD is a temporary record's additional data: no record key
// ("principal\x00plugin", a principal being "kind:id") looks like it.
func tempAD(name string) []byte { return []byte("temp\x00" + name) }

// PutTemp keeps plain, sealed, under name for ttl.
func (v *Vault) PutTemp(ctx context.Context, name string, plain []byte, ttl time.Duration) error {
	ts, ok := v.store.(TempStore)
	if !ok {
		return ErrNotShared
	}
	return ts.PutTemp(ctx, name, v.keys.seal(plain, tempAD(name)), ttl)
}

// TakeTemp is the record kept under name, deleted at once; ok is false
// without one (or once it expired or was taken).
func (v *Vault) TakeTemp(ctx context.Context, name string) ([]byte, bool, error) {
	return v.temp(ctx, name, true)
}

// GetTemp is the record kept under name, left in place.
func (v *Vault) GetTemp(ctx context.Context, name string) ([]byte, bool, error) {
	return v.temp(ctx, name, false)
}

func (v *Vault) temp(ctx context.Context, name string, take bool) ([]byte, bool, error) {
	ts, ok := v.store.(TempStore)
	if !ok {
		return nil, false, ErrNotShared
	}
	get := ts.GetTemp
	if take {
		get = ts.TakeTemp
	}
	sealed, ok, err := get(ctx, name)
	if err != nil || !ok {
		return nil, false, err
	}
	plain, err := v.keys.open(sealed, tempAD(name))
	if err != nil {
		return nil, false, fmt.Errorf("vault temporary record: %w", err)
	}
	return plain, true, nil
}

// tempPrefix is where RedisStore keeps temporary records, one key each
// (a hash's fields cannot expire one by one).
const tempPrefix = "plugkit:vault:temp:"

func (r *RedisStore) PutTemp(ctx context.Context, key string, sealed []byte, ttl time.Duration) error {
	if err := r.c.Set(ctx, tempPrefix+key, sealed, ttl).Err(); err != nil {
		return fmt.Errorf("vault store: %w", err)
	}
	return nil
}

func (r *RedisStore) TakeTemp(ctx context.Context, key string) ([]byte, bool, error) {
	return r.getTemp(r.c.GetDel(ctx, tempPrefix+key))
}

func (r *RedisStore) GetTemp(ctx context.Context, key string) ([]byte, bool, error) {
	return r.getTemp(r.c.Get(ctx, tempPrefix+key))
}

func (r *RedisStore) getTemp(cmd *redis.StringCmd) ([]byte, bool, error) {
	v, err := cmd.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("vault store: %w", err)
	}
	return v, true, nil
}
