package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

// The log's chain head is signed off the per-call path: a goroutine of the
// open log writes a checkpoint line (auditlog.Checkpoint) at most every
// sign_every when lines were written since the last one, and close writes
// one more, so a graceful stop leaves the whole log signed. A call's line
// waits for a checkpoint only when it comes during the signature (tens of
// microseconds, once a sign_every).

// defaultSignEvery is sign_every's default.
const defaultSignEvery = time.Second

// keys are the signing keys a config names, read at apply.
type keys struct {
	key ed25519.PrivateKey
	// prev is previous_key: the key the log was signed with so far. When
	// the log's last checkpoint is by it, a rotation checkpoint signed by it
	// introduces key.
	prev  ed25519.PrivateKey
	every time.Duration
}

// loadKeys reads the key files s names; nil when it names none.
func loadKeys(s settings) (*keys, error) {
	if s.keyPath == "" {
		return nil, nil
	}
	k := &keys{every: s.signEvery}
	var err error
	if k.key, err = auditlog.ReadPrivateKey(s.keyPath); err != nil {
		return nil, fmt.Errorf("config: key: %w", err)
	}
	if s.prevKeyPath != "" {
		if k.prev, err = auditlog.ReadPrivateKey(s.prevKeyPath); err != nil {
			return nil, fmt.Errorf("config: previous_key: %w", err)
		}
		if k.prev.Equal(k.key) {
			return nil, errors.New("config: previous_key is the same key as key")
		}
	}
	return k, nil
}

func pubOf(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

// signer is an open log's signing state.
type signer struct {
	keys   *keys
	log    hclog.Logger
	signed auditlog.Tip // the tip the last checkpoint signed; lf.mu
	stop   chan struct{}
	done   sync.WaitGroup
	once   sync.Once // close may be called again
}

// startSigning goes on from the log's last checkpoint (nil when it has
// none): it rotates when that checkpoint is by previous_key, signs what
// was written since (a process killed before it could), and starts the
// signing goroutine. lf is not shared yet.
func (lf *logFile) startSigning(k *keys, last *auditlog.Checkpoint, log hclog.Logger) error {
	sg := &signer{keys: k, log: log, signed: auditlog.Genesis, stop: make(chan struct{})}
	lf.signer = sg
	cur := auditlog.KeyID(pubOf(k.key))
	tip := lf.w.Tip()
	switch {
	case last == nil:
	case last.KeyID == cur:
		sg.signed = auditlog.Tip{Seq: last.Seq, Hash: last.Hash}
	case k.prev != nil && last.KeyID == auditlog.KeyID(pubOf(k.prev)):
		if err := lf.writeCheckpoint(k.prev, pubOf(k.key)); err != nil {
			return fmt.Errorf("audit log %s: writing the rotation to key %s: %w", lf.path, cur, err)
		}
		log.Info("audit log signing key rotated: a checkpoint signed by the previous key introduces the new one",
			"path", lf.path, "previous", last.KeyID, "key", cur, "seq", tip.Seq)
	default:
		// Not refused: the operator chose the key. Verifiers holding the
		// old key will not trust what this key signs, and say so.
		log.Warn("audit log's last checkpoint is by another key, and previous_key does not name it: "+
			"no rotation is written, so a verifier needs this key's public key from here on",
			"path", lf.path, "last_key", last.KeyID, "key", cur)
	}
	if tip != sg.signed {
		if last != nil && tip.Seq > last.Seq {
			log.Warn("audit log has lines after its last checkpoint (the process before stopped without signing them): signing them now",
				"path", lf.path, "from_seq", last.Seq+1, "to_seq", tip.Seq)
		}
		if err := lf.writeCheckpoint(k.key, nil); err != nil {
			return fmt.Errorf("audit log %s: writing a checkpoint: %w", lf.path, err)
		}
	}
	sg.done.Go(func() { lf.signEvery(sg) })
	return nil
}

// signEvery writes a checkpoint each interval when lines were written
// since the last one.
func (lf *logFile) signEvery(sg *signer) {
	t := time.NewTicker(sg.keys.every)
	defer t.Stop()
	for {
		select {
		case <-sg.stop:
			return
		case <-t.C:
		}
		if err := lf.signIfNew(); err != nil {
			sg.log.Error("audit log checkpoint not written; the next one signs what it would have", "path", lf.path, "error", err)
		}
	}
}

// signIfNew writes a checkpoint when the tip moved since the last one.
func (lf *logFile) signIfNew() error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.closed || lf.uncut || lf.w.Tip() == lf.signer.signed {
		return nil
	}
	return lf.writeCheckpoint(lf.signer.keys.key, nil)
}

// stopSigning stops the goroutine and signs the last lines: a graceful stop
// leaves nothing unsigned. Called by close before it closes the file.
func (lf *logFile) stopSigning() error {
	sg := lf.signer
	if sg == nil {
		return nil
	}
	var err error
	sg.once.Do(func() {
		close(sg.stop)
		sg.done.Wait()
		err = lf.signIfNew()
	})
	return err
}

// writeCheckpoint signs the tip with key (introducing next, on a rotation)
// and appends the checkpoint, whole or not at all, under the fsync policy.
// lf.mu is held, or lf not shared yet.
func (lf *logFile) writeCheckpoint(key ed25519.PrivateKey, next ed25519.PublicKey) error {
	tip := lf.w.Tip()
	c := auditlog.SignCheckpoint(key, tip, next)
	before := lf.size
	n, err := lf.f.Write(append(c.Text(), '\n'))
	lf.size += int64(n)
	if err != nil {
		return errors.Join(err, lf.cutBack(before, tip))
	}
	switch lf.policy {
	case fsyncAlways:
		if err := lf.sync(); err != nil {
			return errors.Join(fmt.Errorf("fsync: %w", err), lf.cutBack(before, tip))
		}
	case fsyncInterval:
		lf.dirty = true
	}
	if next == nil {
		lf.signer.signed = tip
	}
	return nil
}
