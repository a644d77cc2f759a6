package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

// keygenCommand writes a new key pair: the private key 0600, created only
// when the file does not exist, and the public key beside it.
func keygenCommand(args []string, stdout, stderr io.Writer) int {
	pos, err := parseArgs(args, nil, 1)
	if err != nil {
		return usageError(stderr, err)
	}
	path := pos[0]
	pub, priv, err := auditlog.GenerateKey()
	if err != nil {
		fmt.Fprintf(stderr, "audit: keygen: %v\n", err)
		return 2
	}
	privPEM, err := auditlog.MarshalPrivateKey(priv)
	if err != nil {
		fmt.Fprintf(stderr, "audit: keygen: %v\n", err)
		return 2
	}
	pubPEM, err := auditlog.MarshalPublicKey(pub)
	if err != nil {
		fmt.Fprintf(stderr, "audit: keygen: %v\n", err)
		return 2
	}
	// The guide's keys/audit.key names a folder a fresh clone lacks; made
	// 0700, as it holds a private key.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		fmt.Fprintf(stderr, "audit: keygen: folder for the key: %v\n", err)
		return 2
	}
	if err := writeNew(path, privPEM, 0o600); err != nil {
		fmt.Fprintf(stderr, "audit: keygen: %v\n", err)
		return 2
	}
	if err := writeNew(path+".pub", pubPEM, 0o644); err != nil {
		// A private key without its public key is of no use to anyone.
		os.Remove(path)
		fmt.Fprintf(stderr, "audit: keygen: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "private key: %s (keep it readable by the audit plugin only)\npublic key:  %s.pub (key id %s)\n%s",
		path, path, auditlog.KeyID(pub), pubPEM)
	return 0
}

// writeNew creates path with data and mode; it refuses an existing file.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

func proveCommand(args []string, stdout, stderr io.Writer) int {
	pos, err := parseArgs(args, nil, 2)
	if err != nil {
		return usageError(stderr, err)
	}
	seq, err := strconv.ParseUint(pos[0], 10, 64)
	if err != nil {
		return usageError(stderr, fmt.Errorf("SEQ %q is not a line number", pos[0]))
	}
	f, err := os.Open(pos[1])
	if err != nil {
		fmt.Fprintf(stderr, "audit: %v\n", err)
		return 2
	}
	defer f.Close()
	err = auditlog.Prove(f, seq, stdout)
	if errors.Is(err, auditlog.ErrNotSigned) {
		// Before verdict, which takes any error it does not know for an
		// unreadable file (2): this one is documented as 3.
		fmt.Fprintf(stderr, "audit: %s: %v\n", pos[1], err)
		return 3
	}
	if _, status := verdict(pos[1], err, stdout, stderr); status >= 0 {
		return status
	}
	return 0
}

func verifyProofCommand(args []string, stdout, stderr io.Writer) int {
	var key, hash string
	pos, err := parseArgs(args, map[string]*string{"key": &key, "hash": &hash}, 1)
	if err != nil {
		return usageError(stderr, err)
	}
	if key == "" {
		return usageError(stderr, errors.New("verify-proof needs --key PUBKEY"))
	}
	pub, err := auditlog.ReadPublicKey(key)
	if err != nil {
		fmt.Fprintf(stderr, "audit: %v\n", err)
		return 2
	}
	f, err := os.Open(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "audit: %v\n", err)
		return 2
	}
	defer f.Close()
	rep, err := auditlog.VerifyProof(f, pub)
	if err != nil {
		fmt.Fprintf(stdout, "%s: not a valid proof: %v\n", pos[0], err)
		return 1
	}
	if hash != "" && rep.Line.Hash != hash {
		fmt.Fprintf(stdout, "%s: proves line %d with hash %s, not %s\n", pos[0], rep.Line.Seq, rep.Line.Hash, hash)
		return 1
	}
	fmt.Fprintf(stdout, "ok: line %d (hash %s) is in the log signed by key %s at seq %d\n",
		rep.Line.Seq, rep.Line.Hash, rep.KeyID, rep.Signed.Seq)
	return 0
}
