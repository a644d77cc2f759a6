package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Store keeps sealed records by key. Its methods are safe for concurrent
// use.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, bool, error)
	Put(ctx context.Context, key string, sealed []byte) error
	Delete(ctx context.Context, key string) error
	Keys(ctx context.Context) ([]string, error)
	Close() error
}

// FileStore keeps the records in one JSON file (key to sealed bytes),
// written whole to a temporary file and renamed, mode 0600.
type FileStore struct {
	path string
	mu   sync.Mutex
}

// NewFileStore uses path, made on the first write.
func NewFileStore(path string) *FileStore { return &FileStore{path: path} }

func (f *FileStore) read() (map[string][]byte, error) {
	raw, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("vault file: %w", err)
	}
	m := map[string][]byte{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("vault file %s: %w", f.path, err)
	}
	return m, nil
}

func (f *FileStore) write(m map[string][]byte) error {
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".vault-*")
	if err != nil {
		return fmt.Errorf("vault file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("vault file: %w", err)
	}
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return fmt.Errorf("vault file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("vault file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("vault file: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("vault file: %w", err)
	}
	return nil
}

func (f *FileStore) Get(_ context.Context, key string) ([]byte, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.read()
	if err != nil {
		return nil, false, err
	}
	v, ok := m[key]
	return v, ok, nil
}

func (f *FileStore) Put(_ context.Context, key string, sealed []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.read()
	if err != nil {
		return err
	}
	m[key] = sealed
	return f.write(m)
}

func (f *FileStore) Delete(_ context.Context, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.read()
	if err != nil {
		return err
	}
	if _, ok := m[key]; !ok {
		return nil
	}
	delete(m, key)
	return f.write(m)
}

func (f *FileStore) Keys(_ context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.read()
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys, nil
}

func (f *FileStore) Close() error { return nil }

// RedisStore keeps the records in one Redis hash, shared by every replica
// that names the same server.
type RedisStore struct {
	c    *redis.Client
	hash string
}

// redisHash is the hash the records live in.
const redisHash = "plugkit:vault"

// NewRedisStore connects to the Redis URL (redis:// or rediss://).
func NewRedisStore(rawURL string) (*RedisStore, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("vault store: %w", err)
	}
	return &RedisStore{c: redis.NewClient(opt), hash: redisHash}, nil
}

func (r *RedisStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := r.c.HGet(ctx, r.hash, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("vault store: %w", err)
	}
	return v, true, nil
}

func (r *RedisStore) Put(ctx context.Context, key string, sealed []byte) error {
	if err := r.c.HSet(ctx, r.hash, key, sealed).Err(); err != nil {
		return fmt.Errorf("vault store: %w", err)
	}
	return nil
}

func (r *RedisStore) Delete(ctx context.Context, key string) error {
	if err := r.c.HDel(ctx, r.hash, key).Err(); err != nil {
		return fmt.Errorf("vault store: %w", err)
	}
	return nil
}

func (r *RedisStore) Keys(ctx context.Context) ([]string, error) {
	keys, err := r.c.HKeys(ctx, r.hash).Result()
	if err != nil {
		return nil, fmt.Errorf("vault store: %w", err)
	}
	return keys, nil
}

func (r *RedisStore) Close() error { return r.c.Close() }
