package pipeline

import (
	"fmt"

	"github.com/plugkit-go/plugkit/shared/toolname"
)

// A tool's name follows toolname.Check (the MCP character set, 1 to 128
// characters, after any prefix), and no tool served may look like another
// one (toolname.Lookalike: the same name but for case, or for characters
// that look alike): a caller, person or model, asking for read_file must
// not get READ_FILE or read_fiIe of another plugin. A held tool is exempt:
// it is listed to say why it is held, never served, so its name may be the
// one a server gave, however bad, and it claims no lookalikes.
//
// The check reads the registry as it is and the registration that follows
// it happens under Tools.naming, so two plugins registering lookalikes at
// the same time cannot both pass.

// nameIndex maps each key of the names served and of the names marked
// absent (reserved for a plugin that is restarting) to the name and what
// holds it.
type nameIndex [2]map[string]nameHolder

type nameHolder struct{ name, what string }

// names is the snapshot's index, built on first use.
func (s *snapshot) names() *nameIndex {
	if idx := s.nameIdx.Load(); idx != nil {
		return idx
	}
	idx := &nameIndex{make(map[string]nameHolder, len(s.tools)), make(map[string]nameHolder, len(s.tools))}
	add := func(name, what string) {
		for i, k := range toolname.Keys(name) {
			if _, ok := idx[i][k]; !ok {
				idx[i][k] = nameHolder{name, what}
			}
		}
	}
	for name, r := range s.tools {
		if r.info.Held == "" {
			add(name, "of plugin "+r.info.Owner)
		}
	}
	for name, a := range s.absent {
		add(name, "absent now: "+a.reason)
	}
	s.nameIdx.Store(idx)
	return idx
}

// lookalike is the name in idx that name looks like, if any.
func (idx *nameIndex) lookalike(name string) (nameHolder, bool) {
	for i, k := range toolname.Keys(name) {
		if h, ok := idx[i][k]; ok && h.name != name {
			return h, true
		}
	}
	return nameHolder{}, false
}

// checkNames returns, for each tool of a batch that owner registers, why
// its name is refused (nil when it is not). Lookalikes within the batch
// are refused too: the first keeps its name.
func (t *Tools) checkNames(owner string, tools []Tool) []error {
	idx := t.current().names()
	var errs []error
	var batch *nameIndex
	for i, tool := range tools {
		if tool.Held != "" || tool.Name == "" {
			continue // an empty name is refused by compile
		}
		var err error
		if cerr := toolname.Check(tool.Name); cerr != nil {
			err = fmt.Errorf("register tool %q: %w (the MCP tool name rule)", tool.Name, cerr)
		} else if h, ok := idx.lookalike(tool.Name); ok {
			err = fmt.Errorf("register tool %q: it looks like the tool %q (%s): they differ only by case or by characters that look alike, so a caller could take one for the other", tool.Name, h.name, h.what)
		} else if batch != nil {
			if h, ok := batch.lookalike(tool.Name); ok {
				err = fmt.Errorf("register tool %q: it looks like the tool %q (%s): they differ only by case or by characters that look alike, so a caller could take one for the other", tool.Name, h.name, h.what)
			}
		}
		if err != nil {
			if errs == nil {
				errs = make([]error, len(tools))
			}
			errs[i] = err
			continue
		}
		if batch == nil {
			batch = &nameIndex{map[string]nameHolder{}, map[string]nameHolder{}}
		}
		for j, k := range toolname.Keys(tool.Name) {
			if _, ok := batch[j][k]; !ok {
				batch[j][k] = nameHolder{tool.Name, "of plugin " + owner}
			}
		}
	}
	return errs
}
