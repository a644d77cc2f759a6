package authn

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/plugkit-go/plugkit/internal/hclbound"
	"github.com/plugkit-go/plugkit/shared/identity"
)

// KeyPrefix starts every API key, so that a key is recognisable in a
// secret scanner's findings and told apart from a JWT at a glance.
const KeyPrefix = "pk_"

// A keys file holds one block per API key, never the key itself:
//
//	key "ci-bot" {
//	  sha256     = "9f86d081…"          # hex SHA-256 of the key
//	  kind       = "agent"              # user, agent or service (default agent)
//	  attributes = ["group:readers"]    # optional
//	}
//
// `host key add NAME` makes a key, prints it once and appends its block.
type keysFile struct {
	Keys []keySyntax `hcl:"key,block"`
}

type keySyntax struct {
	Name       string    `hcl:"name,label"`
	SHA256     string    `hcl:"sha256"`
	Kind       *string   `hcl:"kind,optional"`
	Attributes []string  `hcl:"attributes,optional"`
	DefRange   hcl.Range `hcl:",def_range"`
}

// Keys are the API keys of a keys file, by the SHA-256 of each key.
type Keys struct {
	path    string
	entries []keyEntry
}

type keyEntry struct {
	sum       [sha256.Size]byte
	principal identity.Principal
}

var keyName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// keysLimits bound a keys file before it is parsed (package hclbound says
// why): a file of 200,000 nested brackets would otherwise overflow the
// parser's stack, which no recover catches, at start or on SIGHUP.
var keysLimits = hclbound.Limits{What: "keys file"}

// LoadKeys reads a keys file. Every problem is reported, with its place; a
// file over 1 MiB or nested deeper than 100 levels is refused before it is
// parsed.
func LoadKeys(path string) (*Keys, hcl.Diagnostics) {
	src, diags := keysLimits.ReadFile(path)
	if diags.HasErrors() {
		return nil, diags
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, diags
	}
	var kf keysFile
	if diags := gohcl.DecodeBody(f.Body, nil, &kf); diags.HasErrors() {
		return nil, diags
	}
	k := &Keys{path: path}
	seen := map[string]bool{}
	for _, ks := range kf.Keys {
		bad := func(summary, format string, args ...any) {
			r := ks.DefRange
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: &r})
		}
		switch {
		case !keyName.MatchString(ks.Name):
			bad("Invalid key name", "key %q: a name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit.", ks.Name)
			continue
		case seen[ks.Name]:
			bad("Duplicate key", "key %q is in the file twice.", ks.Name)
			continue
		}
		seen[ks.Name] = true
		sum, err := hex.DecodeString(ks.SHA256)
		if err != nil || len(sum) != sha256.Size {
			bad("Invalid key hash", "key %q: sha256 is not 64 hex digits (the file holds each key's SHA-256, never the key).", ks.Name)
			continue
		}
		kind := identity.KindAgent
		if ks.Kind != nil {
			kind = *ks.Kind
		}
		if kind != identity.KindUser && kind != identity.KindAgent && kind != identity.KindService {
			bad("Invalid key kind", "key %q: kind %q is not user, agent or service.", ks.Name, kind)
			continue
		}
		if err := checkAttributes(ks.Attributes); err != nil {
			bad("Invalid key attributes", "key %q: %v.", ks.Name, err)
			continue
		}
		e := keyEntry{principal: identity.Principal{ID: ks.Name, Kind: kind, Attributes: ks.Attributes}}
		copy(e.sum[:], sum)
		k.entries = append(k.entries, e)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return k, nil
}

// checkAttributes refuses attributes a selector could not name.
func checkAttributes(attrs []string) error {
	if len(attrs) > identity.MaxAttributes {
		return fmt.Errorf("%d attributes; at most %d", len(attrs), identity.MaxAttributes)
	}
	for _, a := range attrs {
		if k, v, ok := strings.Cut(a, ":"); !ok || k == "" || v == "" || len(a) > identity.MaxPrincipalBytes {
			return fmt.Errorf("attribute %q is not key:value (such as \"group:readers\")", a)
		}
	}
	return nil
}

// Lookup returns the principal of key; ok is false when no entry has its
// hash. Every entry is compared, in constant time, whatever matches.
func (k *Keys) Lookup(key string) (p identity.Principal, ok bool) {
	sum := sha256.Sum256([]byte(key))
	for _, e := range k.entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			p, ok = e.principal, true
		}
	}
	return p, ok
}

// Len is how many keys the file holds.
func (k *Keys) Len() int { return len(k.entries) }

// NewKey makes a key for name and appends its block to the keys file at
// path (made 0600 if missing); the key is returned to be shown once, since
// only its hash is kept. An existing name is refused.
func NewKey(path, name, kind string, attributes []string) (string, error) {
	if !keyName.MatchString(name) {
		return "", fmt.Errorf("key name %q: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	if kind == "" {
		kind = identity.KindAgent
	}
	if kind != identity.KindUser && kind != identity.KindAgent && kind != identity.KindService {
		return "", fmt.Errorf("kind %q is not user, agent or service", kind)
	}
	if err := checkAttributes(attributes); err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err == nil {
		keys, diags := LoadKeys(path)
		if diags.HasErrors() {
			return "", fmt.Errorf("keys file %s: %s", path, diags.Error())
		}
		for _, e := range keys.entries {
			if e.principal.ID == name {
				return "", fmt.Errorf("keys file %s already has a key named %q", path, name)
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	key := KeyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(key))
	var b strings.Builder
	fmt.Fprintf(&b, "\nkey %q {\n  sha256 = %q\n  kind   = %q\n", name, hex.EncodeToString(sum[:]), kind)
	if len(attributes) > 0 {
		fmt.Fprintf(&b, "  attributes = [%s]\n", quoteAll(attributes))
	}
	b.WriteString("}\n")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return key, nil
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
