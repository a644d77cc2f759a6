// Package redisrate keeps per-principal rates and calls in flight in
// Redis, so that every host that shares one Redis server shares each
// principal's budget (policy.RateStore) and concurrency slots
// (policy.SlotStore, redisconc.go).
//
// Each budget is one key holding its GCRA "theoretical arrival time" in
// milliseconds of the Redis server's clock; a Lua script reads, decides
// and writes it in one round trip, atomically (Redis runs one script at a
// time), so two hosts can never both take the budget's last call. The
// hosts' clocks play no part. A key expires once its budget is full again.
package redisrate

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// KeyPrefix starts every key the store writes.
const KeyPrefix = "plugkit:rate:"

// gcra admits one call: KEYS[1] the budget, ARGV[1] the interval between
// calls (ms), ARGV[2] the burst. It returns 1 when admitted, else 0.
var gcra = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local next = tat + interval
if next - now > interval * burst then
  return 0
end
redis.call('SET', KEYS[1], string.format('%.3f', next), 'PX', math.ceil(next - now) + 1000)
return 1
`)

// Store is a Redis server's budgets.
type Store struct {
	c *redis.Client
}

// Open connects to the Redis server at url ("redis://host:port/db",
// "rediss://" for TLS; a password as redis://:PASSWORD@host); the
// connection is made on first use. The error never repeats url, which may
// hold a password.
func Open(url string) (*Store, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("rate store: the URL is not a Redis URL: %s", redact(err.Error(), url))
	}
	// One dial a try (go-redis's default is five, 100ms apart; it still
	// retries the command): a store that is down must cost each call
	// little while on_store_error decides it.
	opts.DialerRetries = 1
	return &Store{c: redis.NewClient(opts)}, nil
}

// Allow takes one call from key's budget (policy.RateStore).
func (s *Store) Allow(ctx context.Context, key string, rate float64, burst int) (bool, error) {
	if rate <= 0 {
		return true, nil
	}
	n, err := gcra.Run(ctx, s.c, []string{KeyPrefix + key}, 1000/rate, max(burst, 1)).Int()
	if err != nil {
		return false, fmt.Errorf("redis: %w", err)
	}
	return n == 1, nil
}

// Close closes the connections.
func (s *Store) Close() error { return s.c.Close() }

func redact(msg, secret string) string {
	if secret == "" {
		return msg
	}
	return strings.ReplaceAll(msg, secret, "(the URL)")
}
