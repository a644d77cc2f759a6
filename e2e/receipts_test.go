package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

// auditCmd runs the audit binary as a person would and returns its stdout,
// stderr and exit status.
func auditCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(pluginPath("audit"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("audit %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// writeSignedDeployment writes a deployment of the files plugin over dir
// and a critical audit plugin signing with key (previous_key when prev is
// set), receipts on, MCP on mcpAddr for API keys in keysFile.
func writeSignedDeployment(t *testing.T, dir, logPath, key, prev, mcpAddr, keysFile string) string {
	t.Helper()
	prevLine := ""
	if prev != "" {
		prevLine = fmt.Sprintf("    previous_key = %q\n", prev)
	}
	src := fmt.Sprintf(`host {
  admin_socket = "host.sock"
  receipts     = true
  mcp          = %q
  mcp_auth {
    keys = %q
  }
}
plugin "files" {
  path = %q
  config {
    root = %q
  }
}
plugin "audit" {
  path     = %q
  critical = true
  config {
    path       = %q
    key        = %q
%s    sign_every = "200ms"
  }
}
`, mcpAddr, keysFile, pluginPath("files"), dir, pluginPath("audit"), logPath, key, prevLine)
	config := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(config, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return config
}

// TestAuditReceiptsProvenOffline: with a signing audit plugin and receipts
// on, a call's result carries its audit seq and line hash (host call
// --json, and MCP's _meta for a Go and a TypeScript client); after the
// host stops, the whole log verifies against the public key, and the
// receipt of the TypeScript client's call is proven offline. A chain
// rewritten with fresh hashes passes the plain verify but not verify
// --key; a truncated log is reported with its last signed seq; a key
// rotation verifies across the boundary with the old key and the new one.
func TestAuditReceiptsProvenOffline(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("first notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, "audit.key")
	out, stderr, code := auditCmd(t, "keygen", keyPath)
	if code != 0 || !strings.Contains(out, "BEGIN PUBLIC KEY") {
		t.Fatalf("audit keygen: exit %d %s %s", code, out, stderr)
	}
	if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the private key's mode: %v %v", fi.Mode(), err)
	}
	if _, _, code := auditCmd(t, "keygen", keyPath); code == 0 {
		t.Error("audit keygen overwrote an existing key")
	}
	pubPath := keyPath + ".pub"

	keysFile := filepath.Join(dir, "keys.hcl")
	out, stderr, code = cli(t, "key", "add", "ann", "--kind", "user", "-f", keysFile)
	if code != 0 || !strings.HasPrefix(out, "pk_") {
		t.Fatalf("host key add: exit %d %q %s", code, out, stderr)
	}
	apiKey := strings.TrimSpace(out)
	addr := freeLoopbackAddr(t)
	endpoint := "http://" + addr + "/mcp"
	logPath := filepath.Join(dir, "audit.log")
	config := writeSignedDeployment(t, dir, logPath, keyPath, "", addr, keysFile)
	h := startHost(t, config, 2)

	// host call --json: the admin API's result carries the receipt.
	r, code := callJSON(t, config, "read_file", `{"path":"notes.md"}`)
	if code != 0 || !r.OK || r.Receipt == nil || r.Receipt.Plugin != "audit" || r.Receipt.Seq == 0 || len(r.Receipt.Hash) != 64 {
		t.Fatalf("host call --json: exit %d %+v receipt %+v\n%s", code, r, r.Receipt, tail(h.stderr.String()))
	}
	receipts := []admin.Receipt{*r.Receipt}
	// A denial is audited and receipted too.
	if r, _ := callJSON(t, config, "read_file", `{"path":"../outside"}`); r.OK || r.Receipt == nil {
		t.Errorf("a failed call: %+v receipt %+v", r, r.Receipt)
	} else {
		receipts = append(receipts, *r.Receipt)
	}

	// MCP, with the Go SDK's client: the receipt is in _meta.
	client := mcp.NewClient(&mcp.Implementation{Name: "receipt-agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{apiKey, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, tail(h.stderr.String()))
	}
	res := mcpCall(t, ctx, cs, "list_dir", `{"path":"."}`)
	cs.Close()
	var goRec admin.Receipt
	if raw, err := json.Marshal(res.Meta["plugkit/receipt"]); err != nil || json.Unmarshal(raw, &goRec) != nil || goRec.Seq == 0 {
		t.Fatalf("MCP result without a receipt in _meta: %v", res.Meta)
	}
	receipts = append(receipts, goRec)

	// The TypeScript SDK's client (what CI runs): its receipt is proven
	// offline below.
	var tsRec *admin.Receipt
	node, script, haveNode := tsClient(t)
	if haveNode {
		cmd := exec.CommandContext(ctx, node, script, endpoint, apiKey, "read_file", `{"path":"notes.md"}`)
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("the TypeScript client: %v: %s", err, ee.Stderr)
		} else if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Result struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"result"`
		}
		var rec admin.Receipt
		if json.Unmarshal(out, &got) != nil || json.Unmarshal(got.Result.Meta["plugkit/receipt"], &rec) != nil || rec.Seq == 0 {
			t.Fatalf("the TypeScript client's result has no receipt in _meta:\n%s", out)
		}
		tsRec = &rec
		receipts = append(receipts, rec)
	}
	// A pause longer than sign_every: the lines so far get a checkpoint of
	// their own, before the last call's.
	time.Sleep(600 * time.Millisecond)
	if r, _ := callJSON(t, config, "list_dir", `{"path":"."}`); !r.OK || r.Receipt == nil {
		t.Fatalf("last call: %+v", r)
	}
	stopRunning(t, config, h)

	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(log), "\n"), "\n")
	calls := 0
	for _, l := range lines {
		if !auditlog.IsCheckpoint([]byte(l)) {
			calls++
		}
	}
	if !auditlog.IsCheckpoint([]byte(lines[len(lines)-1])) {
		t.Fatalf("the log does not end in a checkpoint after a graceful stop:\n%s", log)
	}
	out, _, code = auditCmd(t, "verify", "--key", pubPath, logPath)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("signed: up to seq %d ", calls)) || strings.Contains(out, "not yet signed") {
		t.Fatalf("verify --key: exit %d\n%s\n%s", code, out, log)
	}
	// Each receipt names its line.
	for _, rec := range receipts {
		if !strings.Contains(string(log), fmt.Sprintf(`{"seq":%d,`, rec.Seq)) || !strings.Contains(string(log), `"hash":"`+rec.Hash+`"}`) {
			t.Errorf("receipt %+v names no line of the log", rec)
		}
	}

	t.Run("a receipt proven offline", func(t *testing.T) {
		rec := receipts[0]
		if tsRec != nil {
			rec = *tsRec
		}
		proof, stderr, code := auditCmd(t, "prove", fmt.Sprint(rec.Seq), logPath)
		if code != 0 {
			t.Fatalf("audit prove: exit %d %s", code, stderr)
		}
		proofPath := filepath.Join(dir, "proof")
		if err := os.WriteFile(proofPath, []byte(proof), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _, code := auditCmd(t, "verify-proof", "--key", pubPath, "--hash", rec.Hash, proofPath)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("ok: line %d (hash %s)", rec.Seq, rec.Hash)) {
			t.Fatalf("verify-proof: exit %d %s\n%s", code, out, proof)
		}
		// The same proof does not prove another line, nor a changed one.
		if _, _, code := auditCmd(t, "verify-proof", "--key", pubPath, "--hash", receipts[1].Hash, proofPath); code != 1 {
			t.Errorf("verify-proof of another receipt's hash: exit %d", code)
		}
		forged := strings.Replace(proof, `"tool":"`, `"tool":"x`, 1)
		if err := os.WriteFile(proofPath, []byte(forged), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, _, code := auditCmd(t, "verify-proof", "--key", pubPath, proofPath); code != 1 {
			t.Errorf("verify-proof of a changed proof: exit %d %s", code, out)
		}
		if !haveNode {
			testenv.Missing(t, "node and the TypeScript MCP SDK (npm ci in plugins/mcp/testdata/servers): the TypeScript client's receipt")
		}
	})

	t.Run("a rewritten chain", func(t *testing.T) {
		rewritten := rechain(t, lines, func(l *auditlog.Line) {
			if l.Seq == 1 {
				l.Tool = "list_dir" // what the first call was, say
			}
		}, false)
		path := filepath.Join(dir, "rewritten.log")
		if err := os.WriteFile(path, rewritten, 0o600); err != nil {
			t.Fatal(err)
		}
		// Checkpoints left as they were no longer match the chain: even
		// the verify without a key sees that.
		for _, args := range [][]string{{"verify", path}, {"verify", "--key", pubPath, path}} {
			if out, _, code := auditCmd(t, args...); code != 1 || !strings.Contains(out, "does not match the chain before it") {
				t.Errorf("audit %s of a rechained log: exit %d %s", args[:len(args)-1], code, out)
			}
		}
		// Checkpoints moved along to the new hashes, as a rewriter who
		// knows the format does: the chain and every checkpoint's place
		// check out, so the verify without a key passes; the signatures
		// do not.
		resigned := rechain(t, lines, func(l *auditlog.Line) {
			if l.Seq == 1 {
				l.Tool = "list_dir"
			}
		}, true)
		if err := os.WriteFile(path, resigned, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, _, code := auditCmd(t, "verify", path); code != 0 {
			t.Fatalf("the plain verify of a rechained log with moved checkpoints: exit %d %s (it cannot tell)", code, out)
		}
		out, _, code := auditCmd(t, "verify", "--key", pubPath, path)
		if code != 1 || !strings.Contains(out, "does not verify") {
			t.Errorf("verify --key of a rechained log with moved checkpoints: exit %d %s", code, out)
		}
	})

	t.Run("a truncated log", func(t *testing.T) {
		// Cut after the last call's line: the checkpoints that signed it
		// (and the stop's) are gone, the one before it, written while the
		// test paused, is not.
		last := len(lines) - 1
		for auditlog.IsCheckpoint([]byte(lines[last])) {
			last--
		}
		path := filepath.Join(dir, "truncated.log")
		if err := os.WriteFile(path, []byte(strings.Join(lines[:last+1], "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, _, code := auditCmd(t, "verify", "--key", pubPath, path)
		want := fmt.Sprintf("signed: up to seq %d ", calls-1)
		if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, fmt.Sprintf("not yet signed: lines %d to %d", calls, calls)) {
			t.Errorf("verify --key of a truncated log: exit %d, want %q in\n%s", code, want, out)
		}
	})

	t.Run("key rotation", func(t *testing.T) {
		newKey := filepath.Join(dir, "audit2.key")
		if _, stderr, code := auditCmd(t, "keygen", newKey); code != 0 {
			t.Fatalf("keygen: %s", stderr)
		}
		config := writeSignedDeployment(t, dir, logPath, newKey, keyPath, addr, keysFile)
		h := startHost(t, config, 2)
		r, _ := callJSON(t, config, "read_file", `{"path":"notes.md"}`)
		if !r.OK || r.Receipt == nil {
			t.Fatalf("call after the rotation: %+v", r)
		}
		stopRunning(t, config, h)
		out, _, code := auditCmd(t, "verify", "--key", pubPath, logPath)
		if code != 0 || !strings.Contains(out, "1 key rotations") || !strings.Contains(out, fmt.Sprintf("signed: up to seq %d ", r.Receipt.Seq)) {
			t.Errorf("verify --key with the old key across the rotation: exit %d\n%s", code, out)
		}
		out, _, code = auditCmd(t, "verify", "--key", newKey+".pub", logPath)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("signed: up to seq %d ", r.Receipt.Seq)) || !strings.Contains(out, "by other keys, not checked") {
			t.Errorf("verify --key with the new key: exit %d\n%s", code, out)
		}
		proof, stderr, code := auditCmd(t, "prove", fmt.Sprint(r.Receipt.Seq), logPath)
		if code != 0 {
			t.Fatalf("prove: %s", stderr)
		}
		proofPath := filepath.Join(dir, "proof2")
		if err := os.WriteFile(proofPath, []byte(proof), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, pub := range []string{pubPath, newKey + ".pub"} {
			if out, _, code := auditCmd(t, "verify-proof", "--key", pub, "--hash", r.Receipt.Hash, proofPath); code != 0 {
				t.Errorf("verify-proof with %s across the rotation: exit %d %s\n%s", filepath.Base(pub), code, out, proof)
			}
		}
		// The old key signing after the rotation is refused: append a
		// checkpoint it signs to a copy.
		old, err := auditlog.ReadPrivateKey(keyPath)
		if err != nil {
			t.Fatal(err)
		}
		c := auditlog.SignCheckpoint(old, auditlog.Tip{Seq: r.Receipt.Seq, Hash: r.Receipt.Hash}, nil)
		data, _ := os.ReadFile(logPath)
		path := filepath.Join(dir, "retired.log")
		if err := os.WriteFile(path, append(data, append(c.Text(), '\n')...), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, _, code := auditCmd(t, "verify", "--key", pubPath, path); code != 1 || !strings.Contains(out, "retired") {
			t.Errorf("a checkpoint by the retired key: exit %d %s", code, out)
		}
	})
}

// rechain rewrites a log as someone who can write it but has no key would:
// each call line passed to change, then every hash recomputed. The
// checkpoints stay as they were, or (moveCheckpoints) get the new hashes,
// keeping their old signatures.
func rechain(t *testing.T, lines []string, change func(*auditlog.Line), moveCheckpoints bool) []byte {
	t.Helper()
	var out bytes.Buffer
	tip := auditlog.Genesis
	for _, text := range lines {
		if auditlog.IsCheckpoint([]byte(text)) {
			c, err := auditlog.ParseCheckpoint([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			if moveCheckpoints {
				c.Seq, c.Hash = tip.Seq, tip.Hash
			}
			out.Write(c.Text())
			out.WriteByte('\n')
			continue
		}
		l, err := auditlog.ParseLine([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		change(&l)
		l.Seal(tip.Hash)
		tip = auditlog.Tip{Seq: l.Seq, Hash: l.Hash}
		out.Write(l.Text())
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// tsClient finds node and the TypeScript SDK client script; false outside
// CI when they are missing (in CI testenv fails the test instead).
func tsClient(t *testing.T) (node, script string, ok bool) {
	script, err := filepath.Abs("../plugins/mcp/testdata/servers/ts-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", false
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		return "", "", false
	}
	return node, script, true
}
