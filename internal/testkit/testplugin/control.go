package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// controlArgs are the control tool's arguments: Op says what to do.
type controlArgs struct {
	// Op is one of:
	//   - "pid": return the process id;
	//   - "register": register an echo tool named Name (a registration
	//     made after Apply, from inside a call);
	//   - "dispose": dispose the registration Key ("tool:<name>",
	//     "guard:<i>", "pre:<i>", "post:<i>", "observer:<i>", ...);
	//   - "call": call Method of the injected Service with Args, through
	//     the host;
	//   - "execute": run the tool Tool with Args through the host's pipeline,
	//     as this plugin, under this call's context;
	//   - "execute_blob": run the tool Tool through the host's pipeline
	//     with one argument, Name, a string of N bytes made here (arguments
	//     larger than the control tool's own could carry);
	//   - "blob": return a string of N bytes;
	//   - "deadline": return the milliseconds left before this call's
	//     deadline, or -1 when it has none;
	//   - "noise": print to stdout and to fd 1, then return "ok".
	Op      string          `json:"op"`
	Name    string          `json:"name,omitempty"`
	Key     string          `json:"key,omitempty"`
	Service string          `json:"service,omitempty"`
	Method  string          `json:"method,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	N       int             `json:"n,omitempty"`
}

// control is a tool that runs test operations inside the plugin process.
func (b *builder) control(name string, p *sdk.Context, h *handles) sdk.Tool {
	return sdk.Tool{
		Name:        name,
		Description: "Runs test operations inside the plugin process.",
		Parameters:  `{"type":"object","properties":{"op":{"type":"string"}},"required":["op"]}`,
		Execute: func(ctx context.Context, c *sdk.Call) (any, error) {
			var a controlArgs
			if err := c.Bind(&a); err != nil {
				return nil, err
			}
			switch a.Op {
			case "pid":
				return os.Getpid(), nil
			case "register":
				hd, err := p.RegisterTool(ctx, sdk.Tool{
					Name: a.Name, Description: "Echoes (registered late).",
					Execute: func(ctx context.Context, c *sdk.Call) (any, error) { return c.Arguments, nil },
				})
				if err != nil {
					return nil, err
				}
				h.put("tool:"+a.Name, hd)
				return hd.ID(), nil
			case "dispose":
				hd, ok := h.take(a.Key)
				if !ok {
					return nil, fmt.Errorf("no registration %q", a.Key)
				}
				if err := hd.Dispose(ctx); err != nil {
					return nil, err
				}
				return "disposed", nil
			case "call":
				return p.CallService(ctx, a.Service, a.Method, a.Args)
			case "execute":
				r, err := p.ExecuteTool(ctx, a.Tool, a.Args)
				if err != nil {
					return nil, err
				}
				return r, nil
			case "execute_blob":
				r, err := p.ExecuteTool(ctx, a.Tool, map[string]string{a.Name: strings.Repeat("x", a.N)})
				if err != nil {
					return nil, err
				}
				return r, nil
			case "blob":
				return strings.Repeat("x", a.N), nil
			case "deadline":
				d, ok := ctx.Deadline()
				if !ok {
					return -1, nil
				}
				return time.Until(d).Milliseconds(), nil
			case "noise":
				fmt.Println("noise from a tool call on stdout")
				_, _ = os.NewFile(1, "fd1").WriteString("noise from a tool call on fd 1\n")
				return "ok", nil
			}
			return nil, errors.New("unknown op " + a.Op)
		},
	}
}
