package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// Config is the plugin's configuration block. The host checks the block
// against the schema the SDK derives from this struct; Config.settings
// checks the rest.
type Config struct {
	Path            string `json:"path" doc:"the audit log file; created 0600, with its folder, when missing"`
	Fsync           string `json:"fsync,omitempty" doc:"always (after every line, the default), interval or never"`
	FsyncInterval   string `json:"fsync_interval,omitempty" doc:"with fsync = interval: the longest time between two fsyncs, a Go duration; default 1s"`
	RecordArguments any    `json:"record_arguments,omitempty" doc:"also write each call's arguments, not only their SHA-256: true as they are, \"redacted\" with each credential in their strings replaced by the secrets scanner's marker first; default false"`
	FailOpen        bool   `json:"fail_open,omitempty" doc:"while the log cannot be written (a full disk), let calls through, their results held until it can; default false: every call is DENIED naming audit meanwhile"`
	Key             string `json:"key,omitempty" secret:"file" doc:"an Ed25519 private key file (made by audit keygen): the plugin signs the log's head with it in checkpoint lines; keep it readable by this plugin only"`
	PreviousKey     string `json:"previous_key,omitempty" secret:"file" doc:"with key: the key the log was signed with until now; a checkpoint signed by it introduces key (a rotation)"`
	SignEvery       string `json:"sign_every,omitempty" doc:"with key: the longest time between a line and the checkpoint that signs it, a Go duration; default 1s"`
}

// Defaults.
const (
	defaultFsync         = fsyncAlways
	defaultFsyncInterval = time.Second
)

func newPlugin() sdk.Plugin[Config] {
	a := newAuditor()
	return sdk.Plugin[Config]{
		Name:    "audit",
		Version: "0.1.0",
		Inject:  []string{"tools"},
		// Its receipts are the ones the host hands back (receipts_from).
		Receipts: true,
		Apply: func(ctx context.Context, p *sdk.Context, cfg Config) error {
			s, err := cfg.settings()
			if err != nil {
				return err
			}
			if s.keys, err = loadKeys(s); err != nil {
				return err
			}
			a.setHost(hostOf(p))
			if err := a.start(s, p.Logger()); err != nil {
				return err
			}
			if _, err := p.OnResult(ctx, sdk.ResultListener{Name: "audit", Record: a.observeWithReceipt, Flush: a.flush}); err != nil {
				// The host undoes a failed apply; the log it opened is ours
				// to close.
				return errors.Join(err, a.stop())
			}
			if _, err := p.RegisterTool(ctx, headTool(a)); err != nil {
				return errors.Join(err, a.stop())
			}
			return nil
		},
		Stop: func(context.Context) error { return a.stop() },
	}
}

// fsyncPolicy says when written lines are forced to disk.
type fsyncPolicy string

const (
	fsyncAlways   fsyncPolicy = "always"
	fsyncInterval fsyncPolicy = "interval"
	fsyncNever    fsyncPolicy = "never"
)

// settings is a checked Config.
type settings struct {
	path     string
	fsync    fsyncPolicy
	interval time.Duration // > 0 with fsyncInterval only
	record   bool
	redact   bool // with record: credentials in the arguments are replaced first
	failOpen bool

	keyPath, prevKeyPath string
	signEvery            time.Duration // > 0 with keyPath only
	keys                 *keys         // read by loadKeys at apply; nil without a key
}

// settings checks what the schema cannot say and reports every problem at
// once.
func (c Config) settings() (settings, error) {
	s := settings{path: c.Path, fsync: fsyncPolicy(c.Fsync), failOpen: c.FailOpen,
		keyPath: c.Key, prevKeyPath: c.PreviousKey}
	var errs []string
	switch v := c.RecordArguments; v {
	case nil, false:
	case true:
		s.record = true
	case "redacted":
		s.record, s.redact = true, true
	default:
		errs = append(errs, fmt.Sprintf(`record_arguments = %v: want true, false or "redacted"`, v))
	}
	switch {
	case c.Key == "" && (c.PreviousKey != "" || c.SignEvery != ""):
		errs = append(errs, "previous_key and sign_every need key")
	case c.SignEvery != "":
		d, err := time.ParseDuration(c.SignEvery)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("sign_every = %q: want a positive duration such as \"1s\"", c.SignEvery))
		}
		s.signEvery = d
	case c.Key != "":
		s.signEvery = defaultSignEvery
	}
	if strings.TrimSpace(c.Path) == "" {
		errs = append(errs, "path is required")
	}
	switch s.fsync {
	case "":
		s.fsync = defaultFsync
	case fsyncAlways, fsyncInterval, fsyncNever:
	default:
		errs = append(errs, fmt.Sprintf("fsync = %q: want %q, %q or %q", c.Fsync, fsyncAlways, fsyncInterval, fsyncNever))
	}
	switch {
	case c.FsyncInterval != "" && s.fsync != fsyncInterval:
		// Refused rather than ignored: whoever wrote it expects it to act.
		errs = append(errs, fmt.Sprintf("fsync_interval is set but fsync is %q, not %q", s.fsync, fsyncInterval))
	case c.FsyncInterval != "":
		d, err := time.ParseDuration(c.FsyncInterval)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("fsync_interval = %q: want a positive duration such as \"1s\" or \"250ms\"", c.FsyncInterval))
		}
		s.interval = d
	case s.fsync == fsyncInterval:
		s.interval = defaultFsyncInterval
	}
	if len(errs) > 0 {
		return settings{}, fmt.Errorf("config: %s", strings.Join(errs, "; "))
	}
	return s, nil
}
