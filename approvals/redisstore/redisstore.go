// Package redisstore keeps approval requests in Redis (approvals.Store),
// so that every replica sharing one Redis server lists the requests of
// all and may answer any, while the call waits on the replica that holds
// it.
//
// A request is one key holding its JSON, which lives until the request's
// expiry plus an hour; an index (a sorted set, by creation) lists them.
// Update reads, changes and writes a request under WATCH, so two
// replicas' answers never overwrite each other. A holder's lease is a key
// that expires unless renewed. A request's end is published on one
// channel.
package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plugkit-go/plugkit/approvals"
)

// KeyPrefix starts every key the store writes, and its channel.
const KeyPrefix = "plugkit:approval:"

const (
	indexKey = KeyPrefix + "index"
	channel  = KeyPrefix + "ended"
	// keep is how long a request stays listed past its expiry.
	keep = time.Hour
	// updateTries bounds Update's retries when other replicas keep
	// changing the request under it.
	updateTries = 32
)

func reqKey(id string) string      { return KeyPrefix + "req:" + id }
func holderKey(name string) string { return KeyPrefix + "holder:" + name }

// Store is a Redis server's approval requests.
type Store struct {
	c *redis.Client
}

// Open connects to the Redis server at url ("redis://host:port/db",
// "rediss://" for TLS); the connection is made on first use. The error
// never repeats url, which may hold a password.
func Open(url string) (*Store, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("approval store: the URL is not a Redis URL: %s", strings.ReplaceAll(err.Error(), url, "(the URL)"))
	}
	opts.DialerRetries = 1
	return &Store{c: redis.NewClient(opts)}, nil
}

// Close closes the connections.
func (s *Store) Close() error { return s.c.Close() }

// Create stores a new request (approvals.Store).
func (s *Store) Create(ctx context.Context, r approvals.Request) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ttl := time.Until(r.Expires) + keep
	_, err = s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, reqKey(r.ID), b, ttl)
		p.ZAdd(ctx, indexKey, redis.Z{Score: float64(r.Created.UnixMilli()), Member: r.ID})
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// Load returns one request (approvals.Store).
func (s *Store) Load(ctx context.Context, id string) (approvals.Request, error) {
	b, err := s.c.Get(ctx, reqKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return approvals.Request{}, fmt.Errorf("%w: %s", approvals.ErrNotFound, id)
	}
	if err != nil {
		return approvals.Request{}, fmt.Errorf("redis: %w", err)
	}
	return decode(id, b)
}

func decode(id string, b []byte) (approvals.Request, error) {
	var r approvals.Request
	if err := json.Unmarshal(b, &r); err != nil {
		return approvals.Request{}, fmt.Errorf("redis: request %s is not a request: %w", id, err)
	}
	return r, nil
}

// List returns every request still kept, oldest first; ids whose request
// has expired leave the index (approvals.Store).
func (s *Store) List(ctx context.Context) ([]approvals.Request, error) {
	ids, err := s.c.ZRange(ctx, indexKey, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	if len(ids) == 0 {
		return []approvals.Request{}, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = reqKey(id)
	}
	vals, err := s.c.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	out := make([]approvals.Request, 0, len(ids))
	var gone []any
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			gone = append(gone, ids[i])
			continue
		}
		r, err := decode(ids[i], []byte(str))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(gone) > 0 {
		_ = s.c.ZRem(ctx, indexKey, gone...).Err()
	}
	return out, nil
}

// Update changes one request under WATCH, trying again when another
// replica changed it meanwhile (approvals.Store).
func (s *Store) Update(ctx context.Context, id string, fn func(*approvals.Request) bool) (approvals.Request, error) {
	key := reqKey(id)
	var out approvals.Request
	txf := func(tx *redis.Tx) error {
		b, err := tx.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			return fmt.Errorf("%w: %s", approvals.ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		r, err := decode(id, b)
		if err != nil {
			return err
		}
		if !fn(&r) {
			out = r
			return nil
		}
		nb, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SetArgs(ctx, key, nb, redis.SetArgs{KeepTTL: true})
			return nil
		})
		if err == nil {
			out = r
		}
		return err
	}
	for range updateTries {
		err := s.c.Watch(ctx, txf, key)
		switch {
		case errors.Is(err, redis.TxFailedErr):
			continue
		case errors.Is(err, approvals.ErrNotFound):
			return approvals.Request{}, err
		case err != nil:
			return approvals.Request{}, fmt.Errorf("redis: %w", err)
		}
		return out, nil
	}
	return approvals.Request{}, fmt.Errorf("redis: request %s kept changing under %d tries", id, updateTries)
}

// Hold sets holder's lease (approvals.Store).
func (s *Store) Hold(ctx context.Context, holder string, ttl time.Duration) error {
	if err := s.c.Set(ctx, holderKey(holder), time.Now().UTC().Format(time.RFC3339), ttl).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// Alive says whether holder's lease runs (approvals.Store).
func (s *Store) Alive(ctx context.Context, holder string) (bool, error) {
	n, err := s.c.Exists(ctx, holderKey(holder)).Result()
	if err != nil {
		return false, fmt.Errorf("redis: %w", err)
	}
	return n == 1, nil
}

// Release ends holder's lease (approvals.Store).
func (s *Store) Release(ctx context.Context, holder string) error {
	if err := s.c.Del(ctx, holderKey(holder)).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// Publish tells every subscriber that request id ended (approvals.Store).
func (s *Store) Publish(ctx context.Context, id string) error {
	if err := s.c.Publish(ctx, channel, id).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// Subscribe calls fn with each request id published until ctx ends
// (approvals.Store).
func (s *Store) Subscribe(ctx context.Context, fn func(id string)) error {
	ps := s.c.Subscribe(ctx, channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		return fmt.Errorf("redis: %w", err)
	}
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			fn(m.Payload)
		}
	}
}

var _ approvals.Store = (*Store)(nil)
