package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/approvals"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/shared/identity"
	"github.com/plugkit-go/plugkit/shared/secrets"
)

//go:embed assets templates
var files embed.FS

// Config is what the console serves.
type Config struct {
	Approvals *approvals.Service
	// Status and Tools are the host's plugins and tools (host.Host).
	Status func() []remote.Status
	Tools  func() []pipeline.ToolInfo
	// SignIn turns a credential typed in the sign-in form into the
	// principal it names (the MCP listener's API keys and OAuth issuer).
	SignIn func(ctx context.Context, credential string) (identity.Principal, error)
	// SessionTTL is how long a sign-in lasts.
	SessionTTL time.Duration
	Log        hclog.Logger
	// Local, when set, names the host's own user when r came from one of
	// its processes that is no plugin (authn.Local.Who): that user is
	// signed in without a credential (local.go). Nil: everyone signs in.
	Local func(r *http.Request) (identity.Principal, error)
	// AuditLog, when set, is the audit log the audit page reads.
	AuditLog string
}

// Console is the console's HTTP handler.
type Console struct {
	c    Config
	tmpl *template.Template
	scan *secrets.Scanner
	mux  *http.ServeMux

	mu       sync.Mutex
	sessions map[string]*session
}

type session struct {
	who     identity.Principal
	csrf    string
	expires time.Time
	// local marks a session of the host's own user signed in by its
	// connection (local.go): each request must still come from it.
	local bool
}

// Cookie names: the session, and the sign-in form's own CSRF token (no
// session exists yet when it is posted).
const (
	sessionCookie = "plugkit_console"
	signinCookie  = "plugkit_signin"
)

// csp allows nothing but the console's own stylesheet, images and forms:
// no script at all, no framing.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// New returns the console for c.
func New(c Config) (*Console, error) {
	if c.Log == nil {
		c.Log = hclog.NewNullLogger()
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = 30 * time.Minute
	}
	tmpl, err := template.New("").Funcs(template.FuncMap{
		"age": func(t time.Time) string { return time.Since(t).Round(time.Second).String() },
		"utc": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	}).ParseFS(files, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	con := &Console{c: c, tmpl: tmpl, scan: secrets.New(nil), mux: http.NewServeMux(), sessions: map[string]*session{}}
	assets, _ := fs.Sub(files, "assets")
	con.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(assets)))
	con.mux.HandleFunc("GET /signin", con.signinPage)
	con.mux.HandleFunc("POST /signin", con.signin)
	con.mux.HandleFunc("POST /signout", con.signedIn(con.signout))
	con.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/approvals", http.StatusSeeOther) })
	con.mux.HandleFunc("GET /approvals", con.signedIn(con.approvalsPage))
	con.mux.HandleFunc("POST /approvals/{id}/{verb}", con.signedIn(con.decide))
	con.mux.HandleFunc("GET /plugins", con.signedIn(con.pluginsPage))
	con.mux.HandleFunc("GET /tools", con.signedIn(con.toolsPage))
	con.mux.HandleFunc("GET /audit", con.signedIn(con.auditPage))
	return con, nil
}

// ServeHTTP sets the security headers of every answer and serves it.
func (con *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	con.mux.ServeHTTP(w, r)
}

func token() string { return rand.Text() }

// signedIn wraps a page that needs a live session; a POST must also carry
// the session's CSRF token.
func (con *Console) signedIn(next func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := con.session(r)
		if s == nil && r.Method == http.MethodGet {
			// A page opened by the host's own user signs it in; a form
			// needs the session's token, which a new session has not
			// given out yet.
			s = con.signInLocal(w, r)
		}
		if s == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/signin", http.StatusSeeOther)
				return
			}
			http.Error(w, "not signed in, or the session expired: sign in again", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost && !sameToken(r.PostFormValue("csrf"), s.csrf) {
			con.c.Log.Warn("console: form refused without its CSRF token", "path", r.URL.Path, "principal", s.who.String())
			http.Error(w, "refused: the form has no valid CSRF token; reload the page and try again", http.StatusForbidden)
			return
		}
		next(w, r, s)
	}
}

func sameToken(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (con *Console) session(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	con.mu.Lock()
	defer con.mu.Unlock()
	s := con.sessions[c.Value]
	if s != nil && time.Now().After(s.expires) {
		delete(con.sessions, c.Value)
		return nil
	}
	if s != nil && s.local && !con.fromLocalUser(r) {
		// The cookie of the host's own user, sent from elsewhere.
		return nil
	}
	return s
}

func (con *Console) render(w http.ResponseWriter, name string, data map[string]any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := con.tmpl.ExecuteTemplate(w, name, data); err != nil {
		con.c.Log.Error("console: render", "page", name, "error", err)
	}
}

func (con *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	pre := token()
	http.SetCookie(w, &http.Cookie{Name: signinCookie, Value: pre, Path: "/signin", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: 600})
	con.render(w, "signin.html", map[string]any{"CSRF": pre, "Error": r.URL.Query().Get("error")})
}

func (con *Console) signin(w http.ResponseWriter, r *http.Request) {
	pre, err := r.Cookie(signinCookie)
	if err != nil || !sameToken(r.PostFormValue("csrf"), pre.Value) {
		http.Error(w, "refused: the sign-in form has no valid CSRF token; open /signin again", http.StatusForbidden)
		return
	}
	who, err := con.c.SignIn(r.Context(), r.PostFormValue("credential"))
	if err != nil {
		con.c.Log.Warn("console: sign-in refused", "error", err)
		http.Redirect(w, r, "/signin?error=that+credential+is+not+accepted", http.StatusSeeOther)
		return
	}
	con.startSession(w, who, false)
	http.Redirect(w, r, "/approvals", http.StatusSeeOther)
}

// startSession signs who in: a new session and its cookie.
func (con *Console) startSession(w http.ResponseWriter, who identity.Principal, local bool) *session {
	id := token()
	s := &session{who: who, csrf: token(), expires: time.Now().Add(con.c.SessionTTL), local: local}
	con.mu.Lock()
	for k, o := range con.sessions { // forget expired sessions as new ones come
		if time.Now().After(o.expires) {
			delete(con.sessions, k)
		}
	}
	con.sessions[id] = s
	con.mu.Unlock()
	con.c.Log.Info("console: signed in", "principal", who.String(), "by", map[bool]string{true: "local user", false: "credential"}[local])
	// A browser-session cookie: the server ends the session at its
	// expiry (a cookie's Expires has whole seconds and the client's clock).
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return s
}

func (con *Console) signout(w http.ResponseWriter, r *http.Request, _ *session) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		con.mu.Lock()
		delete(con.sessions, c.Value)
		con.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1})
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// pending is a request as the approvals page shows it.
type pending struct {
	approvals.Request
	Shown     string // the arguments, credentials replaced by markers
	Approvals int
	Mine      bool // the signed-in principal made the call
}

func (con *Console) approvalsPage(w http.ResponseWriter, r *http.Request, s *session) {
	var open, done []pending
	note := r.URL.Query().Get("note")
	reqs, err := con.c.Approvals.List()
	if err != nil {
		note = "requests not listed: " + err.Error()
	}
	for _, req := range reqs {
		p := pending{Request: req, Shown: req.Arguments, Approvals: req.Approvals(), Mine: req.Principal == s.who.String()}
		if red, _, err := con.scan.RedactJSON([]byte(req.Arguments)); err == nil {
			p.Shown = string(red)
		} else {
			p.Shown = "(not shown: " + err.Error() + ")"
		}
		if req.State == approvals.Pending {
			open = append(open, p)
		} else {
			done = append(done, p)
		}
	}
	con.render(w, "approvals.html", map[string]any{"Who": s.who.String(), "CSRF": s.csrf, "Pending": open, "Done": done,
		"Note": note, "Page": "approvals"})
}

func (con *Console) decide(w http.ResponseWriter, r *http.Request, s *session) {
	verb := r.PathValue("verb")
	if verb != "approve" && verb != "deny" {
		http.NotFound(w, r)
		return
	}
	id := r.PathValue("id")
	req, err := con.c.Approvals.Decide(id, s.who, verb == "approve", r.PostFormValue("reason"), r.PostFormValue("args_sha256"))
	note := ""
	switch {
	case errors.Is(err, approvals.ErrNotFound):
		note = "no request " + id
	case err != nil:
		note = "refused: " + err.Error()
	case req.State == approvals.Pending:
		note = fmt.Sprintf("%s: your approval counted, %d of %d", id, req.Approvals(), req.Quorum)
	default:
		note = id + ": " + req.Reason
	}
	http.Redirect(w, r, "/approvals?note="+urlQuery(note), http.StatusSeeOther)
}

func (con *Console) pluginsPage(w http.ResponseWriter, r *http.Request, s *session) {
	con.render(w, "plugins.html", map[string]any{"Who": s.who.String(), "CSRF": s.csrf, "Plugins": con.c.Status(), "Page": "plugins"})
}

func (con *Console) toolsPage(w http.ResponseWriter, r *http.Request, s *session) {
	con.render(w, "tools.html", map[string]any{"Who": s.who.String(), "CSRF": s.csrf, "Tools": con.c.Tools(), "Page": "tools"})
}
