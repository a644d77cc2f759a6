package secrets

// The rules below are taken from gitleaks' default configuration
// (github.com/gitleaks/gitleaks, v8.30.1, config/gitleaks.toml: the regex,
// keywords and entropy of each rule named in its comment). gitleaks is
// distributed under the MIT licence:
//
//	MIT License
//
//	Copyright (c) 2019 Zachary Rice
//
//	Permission is hereby granted, free of charge, to any person obtaining a copy
//	of this software and associated documentation files (the "Software"), to deal
//	in the Software without restriction, including without limitation the rights
//	to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
//	copies of the Software, and to permit persons to whom the Software is
//	furnished to do so, subject to the following conditions:
//
//	The above copyright notice and this permission notice shall be included in all
//	copies or substantial portions of the Software.
//
//	THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
//	IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
//	FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
//	AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
//	LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
//	OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
//	SOFTWARE.
//
// Where a rule differs from gitleaks' its comment says how and why. Two
// differences hold for all: several gitleaks rules of one vendor are one
// kind here (a redaction marker names a kind, not a rule), and gitleaks'
// allowlists of published example values are left out, since an operator
// lists known fakes in the allow list instead.

import (
	"regexp"
	"strings"
)

// rule is one detector. A rule runs its regular expression only on windows
// of the text around an occurrence of one of its keywords, which is what
// keeps a scan fast: most text holds none of them.
type rule struct {
	kind string
	// re finds a credential; its first group, when it has one, is the
	// credential itself (what is redacted and checked), else the whole match.
	re *regexp.Regexp
	// keywords are lower case; the text is compared in ASCII lower case.
	keywords []string
	// before and after bound the window around a keyword occurrence: every
	// match of re that contains the keyword lies within before bytes ahead
	// of it and after bytes from its start (the window is widened further to
	// whole tokens, see window).
	before, after int
	// entropy is the minimum Shannon entropy (bits per byte) of the
	// credential; 0 checks nothing.
	entropy float64
	// plausible, when set, is a quick test of a keyword hit (the keyword
	// at text[at:end]) that lets through at least every hit the regular
	// expression can match around; a hit it refuses is not looked at
	// further.
	plausible func(text string, at, end int) bool
	// reject, when set, refuses a candidate credential; match is the whole
	// match and lead the part of it before the credential.
	reject func(secret, match, lead string) bool
}

// pemWindow is how far after "-----BEGIN" a private key block may end.
// The largest ordinary blocks (PGP keys with subkeys) are a few KiB.
const pemWindow = 64 << 10

// tokenEnd is gitleaks' common suffix: the credential ends at a quote,
// whitespace, a semicolon, an escaped newline or the end of the text.
const tokenEnd = `(?:[\x60'"\s;]|\\[nr]|$)`

var rules = []*rule{
	{
		// gitleaks "private-key". Covers RSA, DSA, EC, OpenSSH, PKCS#8
		// (encrypted or not) and PGP ("PRIVATE KEY BLOCK").
		kind:     "private-key",
		re:       regexp.MustCompile(`(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S-]{64,}?KEY(?: BLOCK)?-----`),
		keywords: []string{"-----begin"},
		after:    pemWindow,
	},
	{
		// gitleaks "aws-access-token".
		kind:     "aws-access-key",
		re:       regexp.MustCompile(`\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b`),
		keywords: []string{"a3t", "akia", "asia", "abia", "acca"},
		before:   1, after: 21,
		entropy: 3,
	},
	{
		// gitleaks has no rule of its own for the 40-character secret key
		// (its generic-api-key rule finds some); this one is the AWS rule of
		// gitleaks v7's default configuration, narrowed to an assignment whose
		// name says AWS and secret, so that it finds the key in credentials
		// files, environment listings and code.
		kind:     "aws-secret-key",
		re:       regexp.MustCompile(`(?i)aws[\w.-]{0,20}?secret[\w.-]{0,20}[\s'"]{0,3}(?:=|:{1,3}=|:|=>|,)[\s'"]{0,5}([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`),
		keywords: []string{"aws"},
		after:    120,
		entropy:  4,
	},
	{
		// gitleaks "github-pat", "github-oauth", "github-app-token",
		// "github-refresh-token" and "github-fine-grained-pat".
		kind:     "github-token",
		re:       regexp.MustCompile(`(?:gh[pousr]_[0-9a-zA-Z]{36}|github_pat_\w{82})`),
		keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		after:    100,
		entropy:  3,
	},
	{
		// gitleaks "gitlab-pat", "gitlab-pat-routable", "gitlab-ptt",
		// "gitlab-rrt", "gitlab-deploy-token", "gitlab-cicd-job-token" and
		// "gitlab-runner-authentication-token".
		kind:     "gitlab-token",
		re:       regexp.MustCompile(`(?:\bglpat-[0-9a-zA-Z_-]{27,300}\.[0-9a-z]{2}[0-9a-z]{7}\b|glpat-[\w-]{20}|glptt-[0-9a-f]{40}|GR1348941[\w-]{20}|gldt-[0-9a-zA-Z_\-]{20}|glcbt-[0-9a-zA-Z]{1,5}_[0-9a-zA-Z_-]{20}|glrt-[0-9a-zA-Z_\-]{20})`),
		keywords: []string{"glpat-", "glptt-", "gr1348941", "gldt-", "glcbt-", "glrt-"},
		before:   1, after: 320,
		entropy: 3,
	},
	{
		// gitleaks "slack-bot-token", "slack-user-token", "slack-app-token",
		// "slack-legacy-token", "slack-legacy-workspace-token",
		// "slack-config-access-token" and "slack-config-refresh-token".
		kind:     "slack-token",
		re:       regexp.MustCompile(`(?:xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*|xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}|(?i:xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+)|xox[os]-\d+-\d+-\d+-[a-fA-F\d]+|xox[ar]-(?:\d-)?[0-9a-zA-Z]{8,48}|(?i:xoxe.xox[bp]-\d-[A-Z0-9]{163,166})|(?i:xoxe-\d-[A-Z0-9]{146}))`),
		keywords: []string{"xoxb", "xoxp", "xoxe", "xapp", "xoxo", "xoxs", "xoxa", "xoxr"},
		after:    200,
		entropy:  2,
	},
	{
		// gitleaks "slack-webhook-url".
		kind:     "slack-webhook",
		re:       regexp.MustCompile(`(?:https?://)?hooks.slack.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}`),
		keywords: []string{"hooks.slack.com"},
		before:   8, after: 90,
	},
	{
		// gitleaks "gcp-api-key": Google API keys (Maps, Firebase, Cloud).
		kind:     "google-api-key",
		re:       regexp.MustCompile(`\b(AIza[\w-]{35})` + tokenEnd),
		keywords: []string{"aiza"},
		before:   1, after: 42,
		entropy: 4,
	},
	{
		// gitleaks "stripe-access-token": secret and restricted keys.
		kind:     "stripe-key",
		re:       regexp.MustCompile(`\b((?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99})` + tokenEnd),
		keywords: []string{"sk_test", "sk_live", "sk_prod", "rk_test", "rk_live", "rk_prod"},
		before:   1, after: 112,
		entropy: 2,
	},
	{
		// gitleaks "jwt", with "eyj" as its keyword where gitleaks has "ey":
		// a JWT's header is a JSON object, so it starts with the base64 of
		// `{"`, which is "eyJ", and "ey" alone is in every "key".
		kind:     "jwt",
		re:       regexp.MustCompile(`\b(ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9\/\\_-]{17,}\.(?:[a-zA-Z0-9\/\\_-]{10,}={0,2})?)` + tokenEnd),
		keywords: []string{"eyj"},
		before:   1, after: 64,
		entropy: 3,
	},
	{
		// gitleaks "generic-api-key": an assignment to a name that says
		// key, token, password, secret… of a value with high entropy, with
		// gitleaks' allowlists of that rule (see rejectGeneric).
		kind:     "generic-secret",
		re:       regexp.MustCompile(`(?i)[\w.-]{0,50}?(?:access|auth|(?-i:[Aa]pi|API)|credential|creds|key|passw(?:or)?d|secret|token)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}([\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})` + tokenEnd),
		keywords: []string{"access", "api", "auth", "key", "credential", "creds", "passwd", "password", "secret", "token"},
		before:   60, after: 220,
		entropy:   3.5,
		plausible: plausibleAssignment,
		reject:    rejectGeneric,
	},
}

// genericIdentifier and genericNotSecret are gitleaks' allowlists of its
// generic-api-key rule: a value that is only letters and punctuation is a
// name, and these names around an assignment are not about credentials.
var (
	genericIdentifier = regexp.MustCompile(`^[a-zA-Z_.-]+$`)
	genericNotSecret  = regexp.MustCompile(`(?i)(?:access(?:ibility|or)|access[_.-]?id|random[_.-]?access|api[_.-]?(?:id|name|version)|rapid|capital|[a-z0-9-]*?api[a-z0-9-]*?:jar:|author|X-MS-Exchange-Organization-Auth|Authentication-Results|(?:credentials?[_.-]?id|withCredentials)|(?:bucket|foreign|hot|idx|natural|primary|pub(?:lic)?|schema|sequence)[_.-]?key|(?:turkey)|key[_.-]?(?:alias|board|code|frame|id|length|mesh|name|pair|press(?:ed)?|ring|selector|signature|size|stone|storetype|word|up|down|left|right)|key[_.-]?vault[_.-]?(?:id|name)|keyVaultToStoreSecrets|key(?:store|tab)[_.-]?(?:file|path)|issuerkeyhash|(?-i:[DdMm]onkey|[DM]ONKEY)|keying|(?:secret)[_.-]?(?:length|name|size)|UserSecretsId|(?:csrf)[_.-]?token|(?:io\.jsonwebtoken[ \t]?:[ \t]?[\w-]+)|(?:api|credentials|token)[_.-]?(?:endpoint|ur[il])|public[_.-]?token|(?:key|token)[_.-]?file|(?-i:(?:[A-Z_]+=\n[A-Z_]+=|[a-z_]+=\n[a-z_]+=)(?:\n|\z))|(?-i:(?:[A-Z.]+=\n[A-Z.]+=|[a-z.]+=\n[a-z.]+=)(?:\n|\z)))`)
	// globalNotSecret is gitleaks' global allowlist of values: booleans,
	// runs of one letter, and placeholders of templates and shells.
	globalNotSecret = regexp.MustCompile(`(?i)^true|false|null$|^(?i:a+|b+|c+|d+|e+|f+|g+|h+|i+|j+|k+|l+|m+|n+|o+|p+|q+|r+|s+|t+|u+|v+|w+|x+|y+|z+|\*+|\.+)$|^\$(?:\d+|{\d+})$|^\$(?:[A-Z_]+|[a-z_]+)$|^\${(?:[A-Z_]+|[a-z_]+)}$|^\{\{[ \t]*[\w ().|]+[ \t]*}}$|^%(?:[A-Z_]+|[a-z_]+)%$|^\{\d{0,2}}$|^@(?:[A-Z_]+|[a-z_]+)@$|^/(?:bin|etc|home|opt|tmp|usr|var)/[\w ./-]+$`)
)

// rejectGeneric applies gitleaks' allowlists of its generic rule, and one
// of ours: a Go module checksum ("h1:" and a base64 SHA-256, as in go.sum
// files, which gitleaks skips by their path) is a hash.
func rejectGeneric(secret, match, lead string) bool {
	if strings.HasSuffix(lead, " h1:") {
		return true
	}
	if genericIdentifier.MatchString(secret) || genericNotSecret.MatchString(match) || globalNotSecret.MatchString(secret) {
		return true
	}
	lower := strings.ToLower(secret)
	for _, w := range genericStopwords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// plausibleAssignment follows the generic rule's expression from the end
// of its keyword with looser classes: a name of up to 20 more characters,
// up to 3 quotes or spaces, an assignment operator, up to 5 quotes, spaces
// or '=', then a value of at least 10 characters. Every match of the
// expression passes it; most keywords in prose and code ("key, ok :=",
// "the key is") do not, which spares running the expression on them.
func plausibleAssignment(text string, _, end int) bool {
	i, n := end, len(text)
	for k := 0; k < 20 && i < n && isNameByte(text[i]); k++ {
		i++
	}
	for k := 0; k < 3 && i < n && (isSpace(text[i]) || text[i] == '\'' || text[i] == '"'); k++ {
		i++
	}
	if i >= n || !strings.ContainsRune("=>:|?,", rune(text[i])) {
		return false
	}
	for k := 0; k < 4 && i < n && strings.ContainsRune("=>:|?", rune(text[i])); k++ {
		i++
	}
	for k := 0; k < 5 && i < n && (isSpace(text[i]) || strings.ContainsRune("`'\"=", rune(text[i]))); k++ {
		i++
	}
	v := i
	for i < n && i-v < 10 && (isNameByte(text[i]) && text[i] != ' ' && text[i] != '\t' || strings.ContainsRune("=+/", rune(text[i]))) {
		i++
	}
	return i-v >= 10
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-' || c == ' ' || c == '\t'
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
