package deployment

// The host block's user_consent block: where the host takes back the
// browser after a user consented to a bridged upstream (the OAuth
// callback), and where it keeps each user's upstream tokens.

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// UserConsent is the host's user_consent block, which a plugin whose auth
// block is user_consent needs.
type UserConsent struct {
	// Listen is the host:port of the callback listener.
	Listen string
	// URL is the listener's address as the users' browsers reach it
	// (scheme://host[:port], no path); "http://" + Listen unless set.
	URL string
	// Vault is the absolute path of the encrypted token file.
	Vault string
	// KeyFile is the absolute path of the vault's AES-256 key (32 random
	// bytes, hex), owner-only.
	KeyFile string
	// Store, when set, keeps the (still encrypted) tokens in Redis instead
	// of Vault, shared by every replica.
	Store string
	// Wait bounds how long a call asked for its principal's consent (a
	// URL-mode elicitation) waits for it.
	Wait time.Duration
}

// defaultConsentWait is Wait's default (the consent package's WaitLimit).
const defaultConsentWait = 5 * time.Minute

type userConsentSyntax struct {
	Listen  *string `hcl:"listen,optional"`
	URL     *string `hcl:"url,optional"`
	Vault   *string `hcl:"vault,optional"`
	KeyFile *string `hcl:"key_file,optional"`
	Store   *string `hcl:"store,optional"`
	Wait    *string `hcl:"wait,optional"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

// userConsent checks the user_consent block: a loopback listen address
// (or any, when url is https), a vault file or a store, a key file.
func (p *parser) userConsent(cs *userConsentSyntax) *UserConsent {
	if cs == nil {
		return nil
	}
	p.names(cs.Body, cs, "the user_consent block")
	c := &UserConsent{Wait: p.duration(cs.Body, "wait", cs.Wait, defaultConsentWait)}
	ok := true
	if cs.Listen == nil {
		p.errorf(cs.DefRange, "Incomplete user_consent block", `user_consent needs listen, the host:port where users' browsers come back after consenting, such as "127.0.0.1:8445".`)
		ok = false
	} else {
		c.Listen = *cs.Listen
		c.URL = "http://" + c.Listen
	}
	if cs.URL != nil {
		u, err := url.Parse(*cs.URL)
		switch {
		case err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "":
			p.errorf(valueRange(cs.Body, "url", cs.DefRange), "Invalid user_consent url", "url %q is not scheme://host[:port] with no path.", *cs.URL)
			ok = false
		case checkHTTPS(*cs.URL) != nil:
			p.errorf(valueRange(cs.Body, "url", cs.DefRange), "Invalid user_consent url", "url %q %v: the authorization code comes back to it.", *cs.URL, checkHTTPS(*cs.URL))
			ok = false
		default:
			c.URL = strings.TrimSuffix(*cs.URL, "/")
		}
	}
	if cs.Listen != nil {
		err := checkLoopback(*cs.Listen, "the consent callback")
		if errors.Is(err, errNotLoopback) && c.URL != "" && strings.HasPrefix(c.URL, "https://") {
			// Reached through a TLS proxy that owns the https url.
			err = nil
		}
		if err != nil {
			p.errorf(valueRange(cs.Body, "listen", cs.DefRange), "Invalid user_consent listen", "listen %q %v.", *cs.Listen, err)
			ok = false
		}
	}
	if cs.KeyFile == nil {
		p.errorf(cs.DefRange, "Incomplete user_consent block", "user_consent needs key_file, the vault's key: make it with `head -c 32 /dev/urandom | xxd -p -c 64 > FILE && chmod 600 FILE`.")
		ok = false
	} else {
		var shown string
		c.KeyFile, shown = p.resolve(*cs.KeyFile)
		if err := checkKeyFile(c.KeyFile); err != nil {
			p.errorf(valueRange(cs.Body, "key_file", cs.DefRange), "Invalid user_consent key_file", "key_file %s: %v.", shown, err)
			ok = false
		}
	}
	if cs.Store != nil {
		if u, err := url.Parse(*cs.Store); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			p.errorf(valueRange(cs.Body, "store", cs.DefRange), "Invalid store", `store is not a Redis URL such as "redis://127.0.0.1:6379/0" (or "rediss://" for TLS).`)
			ok = false
		} else {
			c.Store = *cs.Store
		}
	}
	switch {
	case cs.Vault != nil && cs.Store != nil:
		p.errorf(valueRange(cs.Body, "store", cs.DefRange), "Two token stores", "user_consent keeps its tokens in a vault file or in a Redis store; write one of vault and store.")
		ok = false
	case cs.Vault != nil:
		c.Vault, _ = p.resolve(*cs.Vault)
	case cs.Store == nil:
		p.errorf(cs.DefRange, "Incomplete user_consent block", "user_consent needs vault, the file its encrypted tokens are kept in (or store, a Redis URL shared by replicas).")
		ok = false
	}
	if !ok {
		return nil
	}
	return c
}

// checkKeyFile accepts an existing file that only its owner may read or
// write: the key decrypts every user's tokens.
func checkKeyFile(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("does not exist: make it with `head -c 32 /dev/urandom | xxd -p -c 64 > FILE && chmod 600 FILE`")
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return errors.New("is a folder")
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("is readable or writable by others (mode %04o): chmod 600 it", fi.Mode().Perm())
	}
	return nil
}

// checkVaultReach refuses a sandbox that lets a plugin reach the vault's
// key file or its vault file: the key opens every user's tokens.
func (p *parser) checkVaultReach(d *Deployment) {
	uc := d.Host.UserConsent
	if uc == nil {
		return
	}
	for _, pl := range d.Plugins {
		pol := pl.Sandbox.Policy()
		if pol == nil {
			continue
		}
		for _, f := range []struct{ what, path string }{{"key_file", uc.KeyFile}, {"vault", uc.Vault}} {
			if f.path == "" {
				continue
			}
			for _, dir := range slices.Concat(pol.Read, pol.Write, pol.Exec) {
				if f.path == dir || strings.HasPrefix(f.path, strings.TrimSuffix(dir, "/")+"/") {
					p.errorf(pl.Range, "Sandbox reaches the token vault", "Plugin %q's sandbox gives it %s, which holds user_consent's %s %s: a plugin must never read the users' upstream tokens or their key; keep them out of every sandbox's paths.", pl.Name, dir, f.what, f.path)
				}
			}
		}
	}
}
