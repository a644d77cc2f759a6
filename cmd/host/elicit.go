package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plugkit-go/plugkit/admin"
)

// A plugin may ask the caller something during a call (a bridged server's
// elicitation/create). `host call` at a terminal shows the question on
// stderr and reads the answer from stdin: for a form, each field of the
// requested schema; for a URL, whether the user opened and completed it.
// The answer is an MCP ElicitResult: accept (with the form's content),
// decline or cancel.

// Answers of elicitations that carry no content.
var (
	elicitDeclined  = json.RawMessage(`{"action":"decline"}`)
	elicitCancelled = json.RawMessage(`{"action":"cancel"}`)
	elicitAccepted  = json.RawMessage(`{"action":"accept"}`)
)

// errCancel is an answer of "c" (or the end of stdin): cancel the question.
var errCancel = errors.New("cancelled")

// readLine is the next line of stdin without its newline. One reader
// serves every question of a call, so that answers piped in are not lost
// to a reader's buffer.
func (e *env) readLine() (string, error) {
	if e.in == nil {
		e.in = bufio.NewReader(e.stdin)
	}
	line, err := e.in.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// elicitPrompt asks the person at the terminal a plugin's question q and
// returns the answer. Anything it cannot read or show is cancelled, never
// accepted.
func elicitPrompt(e *env, q admin.Elicitation) json.RawMessage {
	var p struct {
		Mode            string          `json:"mode"`
		Message         string          `json:"message"`
		URL             string          `json:"url"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if err := json.Unmarshal(q.Params, &p); err != nil {
		fmt.Fprintf(e.stderr, "the tool %s asked a question this command cannot read (%v): declined\n", shown(q.Tool), err)
		return elicitDeclined
	}
	switch p.Mode {
	case "url":
		fmt.Fprintf(e.stderr, "The tool %s asks you to open a URL:\n  %s\n  url: %s\n", shown(q.Tool), shown(p.Message), shown(p.URL))
		switch choice(e, "Did you open it and complete what it asks? [y]es, [n]o to decline, [c]ancel: ") {
		case "y":
			return elicitAccepted
		case "n":
			return elicitDeclined
		}
		return elicitCancelled
	case "", "form":
		fmt.Fprintf(e.stderr, "The tool %s asks:\n  %s\n", shown(q.Tool), shown(p.Message))
		fields, err := parseForm(p.RequestedSchema)
		if err != nil {
			fmt.Fprintf(e.stderr, "the form cannot be shown (%v): declined\n", err)
			return elicitDeclined
		}
		switch choice(e, "Answer? [y]es to fill in the form, [n]o to decline, [c]ancel: ") {
		case "y":
		case "n":
			return elicitDeclined
		default:
			return elicitCancelled
		}
		content := map[string]any{}
		for _, f := range fields {
			v, err := askField(e, f)
			if err != nil {
				return elicitCancelled
			}
			if v != nil {
				content[f.name] = v
			}
		}
		out, err := json.Marshal(map[string]any{"action": "accept", "content": content})
		if err != nil {
			return elicitCancelled
		}
		return out
	}
	fmt.Fprintf(e.stderr, "the tool %s asked a question in mode %q, which this command does not know: declined\n", shown(q.Tool), shown(p.Mode))
	return elicitDeclined
}

// choice asks until the answer is y, n or c (yes, no, cancel also do);
// the end of stdin is c.
func choice(e *env, question string) string {
	for {
		fmt.Fprint(e.stderr, question)
		line, err := e.readLine()
		if err != nil {
			fmt.Fprintln(e.stderr)
			return "c"
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return "y"
		case "n", "no":
			return "n"
		case "c", "cancel":
			return "c"
		}
	}
}

// field is one property of a form's requested schema.
type field struct {
	name, title, description string
	kind                     string // string, number, integer, boolean or array
	required                 bool
	def                      any
	// choices are the values an enum allows (for an array, each item's),
	// labels their titles where the schema gives them.
	choices []string
	labels  []string
}

// parseForm reads the fields of a requested schema in the schema's order.
func parseForm(raw json.RawMessage) ([]field, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("requested schema: %w", err)
	}
	names, err := objectKeys(s.Properties)
	if err != nil {
		return nil, fmt.Errorf("requested schema: properties: %w", err)
	}
	var props map[string]struct {
		Type        string   `json:"type"`
		Title       string   `json:"title"`
		Description string   `json:"description"`
		Default     any      `json:"default"`
		Enum        []any    `json:"enum"`
		EnumNames   []string `json:"enumNames"`
		OneOf       []struct {
			Const any    `json:"const"`
			Title string `json:"title"`
		} `json:"oneOf"`
		Items *struct {
			Enum  []any `json:"enum"`
			AnyOf []struct {
				Const any    `json:"const"`
				Title string `json:"title"`
			} `json:"anyOf"`
		} `json:"items"`
	}
	if len(names) > 0 {
		if err := json.Unmarshal(s.Properties, &props); err != nil {
			return nil, fmt.Errorf("requested schema: properties: %w", err)
		}
	}
	var out []field
	for _, n := range names {
		p := props[n]
		f := field{name: n, title: p.Title, description: p.Description, kind: p.Type, required: slices.Contains(s.Required, n), def: p.Default}
		for _, v := range p.Enum {
			f.choices = append(f.choices, fmt.Sprint(v))
		}
		f.labels = p.EnumNames
		for _, o := range p.OneOf {
			f.choices, f.labels = append(f.choices, fmt.Sprint(o.Const)), append(f.labels, o.Title)
		}
		if p.Items != nil {
			for _, v := range p.Items.Enum {
				f.choices = append(f.choices, fmt.Sprint(v))
			}
			for _, o := range p.Items.AnyOf {
				f.choices, f.labels = append(f.choices, fmt.Sprint(o.Const)), append(f.labels, o.Title)
			}
		}
		switch f.kind {
		case "string", "number", "integer", "boolean":
		case "array":
			if len(f.choices) == 0 {
				return nil, fmt.Errorf("field %s: an array without the values its items may take", n)
			}
		default:
			return nil, fmt.Errorf("field %s: type %q; a form's fields are string, number, integer, boolean or an array of choices", n, p.Type)
		}
		out = append(out, f)
	}
	return out, nil
}

// objectKeys are the keys of a JSON object in their order.
func objectKeys(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// askField asks one field until the answer fits it; it returns nil for an
// optional field left empty, errCancel at the end of stdin or on "\c".
func askField(e *env, f field) (any, error) {
	label := f.name
	if f.title != "" && f.title != f.name {
		label += " (" + f.title + ")"
	}
	hint := f.kind
	if len(f.choices) > 0 {
		var cs []string
		for i, c := range f.choices {
			if i < len(f.labels) && f.labels[i] != "" && f.labels[i] != c {
				c += " = " + f.labels[i]
			}
			cs = append(cs, c)
		}
		hint = "one of: " + strings.Join(cs, ", ")
		if f.kind == "array" {
			hint = "any of, separated by commas: " + strings.Join(cs, ", ")
		}
	} else if f.kind == "boolean" {
		hint = "y/n"
	}
	if f.required {
		hint += ", required"
	}
	if f.def != nil {
		hint += fmt.Sprintf(", empty for %v", f.def)
	}
	if f.description != "" {
		fmt.Fprintf(e.stderr, "  %s\n", shown(f.description))
	}
	for {
		fmt.Fprintf(e.stderr, "  %s [%s] (\\c to cancel): ", shown(label), shown(hint))
		line, err := e.readLine()
		if err != nil {
			fmt.Fprintln(e.stderr)
			return nil, errCancel
		}
		line = strings.TrimSpace(line)
		if line == `\c` {
			return nil, errCancel
		}
		if line == "" {
			if f.def != nil {
				return f.def, nil
			}
			if !f.required {
				return nil, nil
			}
			fmt.Fprintf(e.stderr, "  %s is required\n", shown(f.name))
			continue
		}
		v, err := f.value(line)
		if err != nil {
			fmt.Fprintf(e.stderr, "  %v\n", err)
			continue
		}
		return v, nil
	}
}

// value is what line says for the field, or why it does not fit.
func (f field) value(line string) (any, error) {
	switch f.kind {
	case "array":
		var out []string
		for _, part := range strings.Split(line, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			if !slices.Contains(f.choices, part) {
				return nil, fmt.Errorf("%q is not one of the choices", shown(part))
			}
			out = append(out, part)
		}
		return out, nil
	case "boolean":
		switch strings.ToLower(line) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not y or n", shown(line))
	case "integer":
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", shown(line))
		}
		return n, nil
	case "number":
		n, err := strconv.ParseFloat(line, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", shown(line))
		}
		return n, nil
	}
	if len(f.choices) > 0 && !slices.Contains(f.choices, line) {
		return nil, fmt.Errorf("%q is not one of the choices", shown(line))
	}
	return line, nil
}

// addCallFlags gives the call command its --answer-from-stdin flag.
func addCallFlags(root *cobra.Command, e *env) {
	for _, c := range root.Commands() {
		if c.Name() == "call" {
			c.Flags().BoolVar(&e.answerFromStdin, "answer-from-stdin", false, "answer the call's questions (approval, a tool's form or URL) from stdin, one line each, even when stdin is not a terminal")
		}
	}
}
