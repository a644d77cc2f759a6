package secrets

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/shared/secrets/fake"
)

// kindCase is one fake credential and the kind it must be found as.
type kindCase struct {
	name, kind, secret string
}

func kindCases(t testing.TB) []kindCase {
	f := fake.New(1)
	return []kindCase{
		{"RSA private key", "private-key", fake.RSAKey(t)},
		{"EC private key", "private-key", fake.ECKey(t)},
		{"OpenSSH private key", "private-key", f.Armoured("OPENSSH PRIVATE KEY", 400, "")},
		{"PGP private key", "private-key", f.Armoured("PGP PRIVATE KEY BLOCK", 600, "Version: Fake 1.0\n\n")},
		{"encrypted PKCS#8 key", "private-key", f.Armoured("ENCRYPTED PRIVATE KEY", 300, "")},
		{"AWS access key", "aws-access-key", f.AWSAccessKey()},
		{"GitHub PAT", "github-token", f.GitHubToken("ghp_")},
		{"GitHub OAuth token", "github-token", f.GitHubToken("gho_")},
		{"GitHub app token", "github-token", f.GitHubToken("ghs_")},
		{"GitHub fine-grained PAT", "github-token", f.GitHubFineGrained()},
		{"GitLab PAT", "gitlab-token", f.GitLabToken()},
		{"Slack bot token", "slack-token", f.SlackBotToken()},
		{"Slack user token", "slack-token", f.SlackUserToken()},
		{"Google API key", "google-api-key", f.GoogleAPIKey()},
		{"Stripe key", "stripe-key", f.StripeKey()},
		{"JWT", "jwt", f.JWT()},
	}
}

// TestFindEachKind finds each kind alone, in a sentence, at the start and
// end of a text, and across the lines of a file; the finding covers
// exactly the credential.
func TestFindEachKind(t *testing.T) {
	s := New(nil)
	for _, tc := range kindCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			for _, ctx := range []struct{ name, before, after string }{
				{"alone", "", ""},
				{"in prose", "here it is: ", " (do not share)"},
				{"quoted in code", "const k = \"", "\"\nfmt.Println(k)\n"},
				{"among lines", "line one\nline two\n", "\nline four\n"},
				{"with CRLF", "a\r\n", "\r\nb\r\n"},
			} {
				t.Run(ctx.name, func(t *testing.T) {
					secret := strings.TrimSuffix(tc.secret, "\n")
					text := ctx.before + secret + ctx.after
					got := s.Find(text)
					want := []Finding{{Kind: tc.kind, Start: len(ctx.before), End: len(ctx.before) + len(secret)}}
					if !slices.Equal(got, want) {
						t.Fatalf("Find = %+v, want %+v", got, want)
					}
				})
			}
		})
	}
}

func TestFindAssignments(t *testing.T) {
	f := fake.New(2)
	aws, generic := f.AWSSecretKey(), f.GenericValue()
	s := New(nil)
	for _, tc := range []struct {
		name, text, kind, secret string
	}{
		{"credentials file", "[default]\naws_access_key_id = AKIA" + f.Pick(fake.Base32, 16) + "\naws_secret_access_key = " + aws + "\n", "aws-secret-key", aws},
		{"environment", "AWS_SECRET_ACCESS_KEY=" + aws, "aws-secret-key", aws},
		{"JSON", `{"AwsSecretKey": "` + aws + `"}`, "aws-secret-key", aws},
		{"password =", `db_password = "` + generic + `"`, "generic-secret", generic},
		{"token:", "api_token: " + generic + "\n", "generic-secret", generic},
		{"a value on the next line", "password:\n  " + generic + "\n", "generic-secret", generic},
		{"Authorization header", "X-Api-Key: " + generic, "generic-secret", generic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := s.Find(tc.text)
			i := strings.LastIndex(tc.text, tc.secret)
			want := Finding{Kind: tc.kind, Start: i, End: i + len(tc.secret)}
			if !slices.Contains(got, want) {
				t.Fatalf("Find(%q) = %+v, want it to hold %+v", tc.text, got, want)
			}
		})
	}
}

// TestNotSecrets is the false-positive corpus in small: identifiers,
// digests, hashes and low-entropy assignments pass.
func TestNotSecrets(t *testing.T) {
	s := New(nil)
	sum := sha256.Sum256([]byte("x"))
	for _, text := range []string{
		"password = hunter2",
		"password: ${DB_PASSWORD}",
		`token = "{{ .Token }}"`,
		"api_key = process.env.API_KEY",
		"key_id: 1234",
		"secret_name = my_secret",
		"access_token_url = https://example.com/oauth/token",
		"sha256: " + hex.EncodeToString(sum[:]),
		"checksum = sha256:" + hex.EncodeToString(sum[:]),
		"commit 248d18c6b0a1f3e1c2d4e5f60718293a4b5c6d7e",
		"id = 0a1ad66d-5c3e-4f1a-9b2c-7d8e9f0a1b2c",
		"request_id: 0a1ad66d-5c3e-4f1a-9b2c-7d8e9f0a1b2c",
		"-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
		"-----BEGIN CERTIFICATE-----\n" + strings.Repeat("MIIB", 40) + "\n-----END CERTIFICATE-----",
		"the AKIA prefix marks an access key id; ASIA a temporary one",
		"eyJhbGciOiJIUzI1NiJ9 is only a header",
	} {
		if got := s.Find(text); len(got) != 0 {
			t.Errorf("Find(%q) = %+v, want nothing", text, got)
		}
	}
}

// TestFalsePositiveCorpus scans the repository's own files (source, docs,
// the corpus folder, go.sum's hashes) and every test fixture besides: none
// holds a credential, so nothing may be found.
func TestFalsePositiveCorpus(t *testing.T) {
	root := filepath.Join("..", "..")
	// The docs use AWS's published example key id, as an allow list entry.
	s := New([]string{"AKIAIOSFODNN7EXAMPLE"})
	files, size := 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "run", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		// Test files of this package build credential-shaped strings;
		// the sample sandbox (and its template) is sample data, one file a
		// fake key on purpose; the sample's policy tests show a fake key
		// being denied.
		if slash := filepath.ToSlash(p); strings.HasPrefix(slash, "../../sandbox/") || strings.HasPrefix(slash, "../../sandbox.example/") ||
			slash == "../../policy_test.hcl" ||
			(strings.HasPrefix(slash, "../../plugins/safety/") || strings.HasPrefix(slash, "../../shared/secrets/")) && strings.HasSuffix(slash, "_test.go") {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // what a link points to is scanned where it is
		}
		switch filepath.Ext(p) {
		case ".go", ".md", ".hcl", ".mod", ".sum", ".proto", ".txt", ".json", ".yaml", ".yml", "":
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b, 0) >= 0 {
			return nil // a binary built in the tree
		}
		files++
		size += len(b)
		for _, f := range s.Find(string(b)) {
			line := strings.Count(string(b[:f.Start]), "\n") + 1
			t.Errorf("%s:%d: found %s: %q", p, line, f.Kind, b[f.Start:min(f.End, f.Start+16)])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 || size < 500_000 {
		t.Fatalf("scanned only %d files, %d bytes: is the root right?", files, size)
	}
	t.Logf("scanned %d files, %d bytes", files, size)
	// Identifiers that look like hashes.
	var b strings.Builder
	for i := range 2000 {
		sum := sha256.Sum256(fmt.Appendf(nil, "%d", i))
		fmt.Fprintf(&b, "sha256:%x %x %s-%s-%s-%s-%s\n", sum, sum[:20],
			hex.EncodeToString(sum[:4]), hex.EncodeToString(sum[4:6]), hex.EncodeToString(sum[6:8]),
			hex.EncodeToString(sum[8:10]), hex.EncodeToString(sum[10:16]))
		fmt.Fprintf(&b, "digest: %s\n", base64.StdEncoding.EncodeToString(sum[:]))
	}
	if got := s.Find(b.String()); len(got) != 0 {
		t.Errorf("found %d in hashes, first %+v", len(got), got[0])
	}
}

func TestAllow(t *testing.T) {
	f := fake.New(3)
	allowed, other := f.AWSAccessKey(), f.AWSAccessKey()
	s := New([]string{allowed})
	got := s.Find(allowed + " " + other)
	want := []Finding{{Kind: "aws-access-key", Start: len(allowed) + 1, End: len(allowed) + 1 + len(other)}}
	if !slices.Equal(got, want) {
		t.Fatalf("Find = %+v, want only the key not allowed %+v", got, want)
	}
	if got := New(nil).Find("AKIAIOSFODNN7EXAMPLE"); len(got) != 1 {
		t.Errorf("AWS's documented example key: found %+v; it is found unless allowed", got)
	}
	if got := New([]string{"AKIAIOSFODNN7EXAMPLE"}).Find("AKIAIOSFODNN7EXAMPLE"); len(got) != 0 {
		t.Errorf("allowed example key found: %+v", got)
	}
}

func TestBase64(t *testing.T) {
	f := fake.New(4)
	key := f.AWSAccessKey()
	for _, tc := range []struct{ name, text string }{
		{"std", base64.StdEncoding.EncodeToString([]byte("aws key " + key + "\n"))},
		{"url", base64.RawURLEncoding.EncodeToString([]byte("{\"k\":\"" + key + "\"}"))},
		{"a kubernetes secret", "data:\n  token: " + base64.StdEncoding.EncodeToString([]byte(f.GitHubToken("ghp_")))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := New(nil).Find(tc.text)
			// The encoded token is also a generic token: value, so either
			// kind covers it.
			if len(got) != 1 || !strings.HasSuffix(got[0].Kind, " (base64)") && got[0].Kind != "generic-secret" {
				t.Fatalf("Find(%q) = %+v, want one base64 finding", tc.text, got)
			}
			red, _ := New(nil).Redact(tc.text)
			if strings.Contains(red, tc.text[got[0].Start:got[0].End]) {
				t.Errorf("redacted %q still holds the encoded credential", red)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	f := fake.New(5)
	key, tok := f.AWSAccessKey(), f.GitHubToken("ghp_")
	pemKey := fake.RSAKey(t)
	text := "id " + key + "\ntoken " + tok + "\n" + pemKey + "end\n"
	got, kinds := New(nil).Redact(text)
	want := "id [redacted: aws-access-key]\ntoken [redacted: github-token]\n[redacted: private-key]\nend\n"
	if got != want {
		t.Errorf("Redact =\n%s\nwant\n%s", got, want)
	}
	if !slices.Equal(kinds, []string{"aws-access-key", "github-token", "private-key"}) {
		t.Errorf("kinds %q", kinds)
	}
	if same, kinds := New(nil).Redact("nothing here"); same != "nothing here" || kinds != nil {
		t.Errorf("Redact of clean text = %q, %q", same, kinds)
	}
}

func TestFindJSON(t *testing.T) {
	f := fake.New(6)
	key, tok, slack := f.AWSAccessKey(), f.GitHubToken("ghp_"), f.SlackBotToken()
	args := map[string]any{
		"path": "notes.md",
		"meta": map[string]any{"tags": []any{"a", 1, true, nil, "k=" + key}},
		"items": []any{
			map[string]any{"body": "line 1\n" + tok + "\nline 3"},
		},
		"a/b~c": slack,
	}
	raw, _ := json.Marshal(args)
	hits, err := New(nil).FindJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := []Hit{{"slack-token", "/a~1b~0c"}, {"github-token", "/items/0/body"}, {"aws-access-key", "/meta/tags/4"}}
	if !slices.Equal(hits, want) {
		t.Errorf("FindJSON = %+v, want %+v", hits, want)
	}
	keyed, _ := json.Marshal(map[string]any{"x": map[string]any{key: 1}})
	if hits, _ := New(nil).FindJSON(keyed); !slices.Equal(hits, []Hit{{"aws-access-key", "/x"}}) {
		t.Errorf("a key in an object key: %+v", hits)
	}
}

// TestRedactJSON checks that a redaction replaces exactly the credential:
// the value with the marker where the credential was equals the original
// with the credential cut out, byte for byte, escapes and spacing kept.
func TestRedactJSON(t *testing.T) {
	f := fake.New(7)
	key, jwt := f.AWSAccessKey(), f.JWT()
	pemKey := fake.ECKey(t)
	pemJSON, _ := json.Marshal(pemKey)
	for _, tc := range []struct{ name, raw, want string }{
		{"a top-level string", `"` + key + `"`, `"[redacted: aws-access-key]"`},
		{"nested with spacing kept",
			"{\n  \"a\": [1, \"x " + key + " y\", {\"b\" : \"" + jwt + "\"}],\n  \"c\": \"\\u00e9t\\u00e9\"\n}",
			"{\n  \"a\": [1, \"x [redacted: aws-access-key] y\", {\"b\" : \"[redacted: jwt]\"}],\n  \"c\": \"\\u00e9t\\u00e9\"\n}"},
		{"escapes around a credential",
			`{"s":"caf\u00e9\t` + key + `\n\"q\" \ud83d\ude00"}`,
			`{"s":"caf\u00e9\t[redacted: aws-access-key]\n\"q\" \ud83d\ude00"}`},
		{"a PEM block with escaped newlines",
			`{"content":"before\n` + strings.Trim(string(pemJSON), `"`) + `after"}`,
			`{"content":"before\n[redacted: private-key]\nafter"}`},
		{"nothing to redact", `{"a": "b", "n": [1,2]}`, `{"a": "b", "n": [1,2]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := New(nil).RedactJSON([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("RedactJSON =\n%s\nwant\n%s", got, tc.want)
			}
			if !json.Valid(got) {
				t.Errorf("result is not JSON")
			}
		})
	}
}

func TestKinds(t *testing.T) {
	want := []string{"private-key", "aws-access-key", "aws-secret-key", "github-token", "gitlab-token", "slack-token",
		"slack-webhook", "google-api-key", "stripe-key", "jwt", "generic-secret"}
	if got := Kinds(); !slices.Equal(got, want) {
		t.Errorf("Kinds = %q", got)
	}
}
