package redisrate

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// SlotPrefix starts every key of the shared concurrency (policy.SlotStore).
//
// Each principal's calls in flight are one sorted set: a member per call (a
// lease, named at random by the host that took it) whose score is the
// moment, in milliseconds of the Redis server's clock, the lease lapses
// unless renewed. Leases that have lapsed are dropped before counting, so
// the slots of a host that died come back within one lease's time to live.
const SlotPrefix = "plugkit:conc:"

// acquire takes a slot: KEYS[1] the principal's leases, ARGV[1] the limit,
// ARGV[2] the lease's time to live (ms), ARGV[3] the lease. It returns
// {1, running} when taken (running counting it), else {0, running}. The
// key itself expires with its last lease.
var acquire = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = redis.call('ZCARD', KEYS[1])
if n >= limit then
  return {0, n}
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
if redis.call('PTTL', KEYS[1]) < ttl + 1000 then
  redis.call('PEXPIRE', KEYS[1], ttl + 1000)
end
return {1, n + 1}
`)

// renew pushes a lease's end ttl from now: KEYS[1] the principal's leases,
// ARGV[1] the time to live (ms), ARGV[2] the lease. It returns 0 when the
// lease is gone (it lapsed and another call's acquire dropped it): a lease
// is never brought back, or two hosts could both hold the last slot.
var renew = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[2])
if redis.call('PTTL', KEYS[1]) < ttl + 1000 then
  redis.call('PEXPIRE', KEYS[1], ttl + 1000)
end
return 1
`)

// Acquire takes one of key's limit slots under lease for ttl, atomically
// across every host that shares the store (policy.SlotStore); running is
// how many key holds, this one included when ok.
func (s *Store) Acquire(ctx context.Context, key, lease string, limit int, ttl time.Duration) (ok bool, running int, err error) {
	v, err := acquire.Run(ctx, s.c, []string{SlotPrefix + key}, limit, ttl.Milliseconds(), lease).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("redis: %w", err)
	}
	if len(v) != 2 {
		return false, 0, fmt.Errorf("redis: the acquire script answered %v", v)
	}
	return v[0] == 1, int(v[1]), nil
}

// Renew keeps lease for ttl more; false when the lease was lost.
func (s *Store) Renew(ctx context.Context, key, lease string, ttl time.Duration) (bool, error) {
	n, err := renew.Run(ctx, s.c, []string{SlotPrefix + key}, ttl.Milliseconds(), lease).Int()
	if err != nil {
		return false, fmt.Errorf("redis: %w", err)
	}
	return n == 1, nil
}

// Release gives lease's slot back; releasing a lease that is gone is no
// error.
func (s *Store) Release(ctx context.Context, key, lease string) error {
	if err := s.c.ZRem(ctx, SlotPrefix+key, lease).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}
