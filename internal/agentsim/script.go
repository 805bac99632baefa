// Package agentsim is a scripted model server for end-to-end tests of real
// coding agents: it speaks the Anthropic Messages API (Claude Code) and
// the OpenAI Responses API (Codex) on a local port, answers each turn of
// the agent's loop with the tool call a test's script names, and records
// every request, so a test can assert exactly what the agent told the
// model (the tool results it sent back).
//
// A turn is chosen by how far the conversation in the request has got
// (the number of model turns it already holds), not by a counter, so an
// agent that retries a request, or makes side requests (a title, a token
// count), gets the same answer for the same point of the conversation.
package agentsim

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// ToolCall is one tool the scripted model calls.
type ToolCall struct {
	// Name is the tool's name as the agent declares it ("Write", "Bash",
	// "mcp__intentfs__check_path", "apply_patch", "shell").
	Name string
	// Input is the tool's input: an object for most tools; a string for
	// a free-form tool (Codex's apply_patch).
	Input any
}

// Turn is one answer of the model: a text, then the tool calls (none:
// the turn ends the conversation).
type Turn struct {
	Text  string
	Calls []ToolCall
}

// Call is a turn that calls one tool.
func Call(name string, input any) Turn {
	return Turn{Calls: []ToolCall{{Name: name, Input: input}}}
}

// Say is a final turn: text and no tool call.
func Say(text string) Turn { return Turn{Text: text} }

// DefaultReply is the text of a turn past the end of the script and of a
// request that is not the agent's loop.
const DefaultReply = "Done."

// maxBody bounds a request body the server reads (a long conversation
// with file contents stays far below this).
const maxBody = 32 << 20

// maxRecorded bounds how many requests a server keeps.
const maxRecorded = 1000

// Request is one request the agent made.
type Request struct {
	Method, Path string
	Body         []byte
}

// ToolResult is what the agent told the model about one tool call.
type ToolResult struct {
	// CallID is the id the model gave the call.
	CallID string
	// Tool is the name of the tool called.
	Tool string
	// Text is the result as the model receives it, text blocks joined
	// with newlines.
	Text string
	// IsError is set when the agent marked the result as an error.
	IsError bool
	// Context is the text the agent added after the result, before the
	// model's next turn (a hook's additional context), blocks joined
	// with newlines.
	Context string
}

// recorder keeps the requests of a server and its script.
type recorder struct {
	script []Turn
	mu     sync.Mutex
	reqs   []Request
}

func (r *recorder) record(req Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) < maxRecorded {
		r.reqs = append(r.reqs, req)
	}
}

// Requests returns a copy of every request recorded so far.
func (r *recorder) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

// turn is the script's turn at index i (past the end: DefaultReply).
func (r *recorder) turn(i int) Turn {
	if i >= 0 && i < len(r.script) {
		return r.script[i]
	}
	return Say(DefaultReply)
}

// turnAfterCalls is the index of the turn that follows n tool calls
// already in the conversation, the script's turns counted by their calls.
func (r *recorder) turnAfterCalls(n int) int {
	for i, t := range r.script {
		if n <= 0 {
			return i
		}
		c := len(t.Calls)
		if c == 0 {
			c = 1
		}
		n -= c
	}
	return len(r.script)
}

// callID is the id of the k-th call of turn i: stable, so a retried
// request gets the same ids.
func callID(prefix string, i, k int) string { return fmt.Sprintf("%s%02d_%d", prefix, i, k) }

// inputJSON is a call's input as JSON text.
func inputJSON(in any) (string, error) {
	if in == nil {
		return "{}", nil
	}
	if s, ok := in.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		return "", fmt.Errorf("tool input %v: %w", in, err)
	}
	return string(b), nil
}

// joinText flattens a tool result's content: a string, or a list of
// blocks whose text parts are joined with newlines.
func joinText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	var parts []string
	for _, b := range blocks {
		if b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
