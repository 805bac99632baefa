package agentsim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
)

// Anthropic is a scripted Anthropic Messages API: POST /v1/messages
// (streamed as server-sent events or not) and POST
// /v1/messages/count_tokens. Point Claude Code at it with
// ANTHROPIC_BASE_URL=URL().
type Anthropic struct {
	recorder
	srv *httptest.Server
}

// NewAnthropic starts a server on a loopback port that plays script.
func NewAnthropic(script ...Turn) *Anthropic {
	a := &Anthropic{recorder: recorder{script: script}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	return a
}

// URL is the server's base URL (http://127.0.0.1:PORT).
func (a *Anthropic) URL() string { return a.srv.URL }

// Close stops the server.
func (a *Anthropic) Close() { a.srv.Close() }

// messagesRequest is the part of a Messages request the server reads.
type messagesRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// contentBlock is one block of a message's content.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// blocksOf reads a message's content: a list of blocks, or a string (one
// text block).
func blocksOf(raw json.RawMessage) []contentBlock {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []contentBlock{{Type: "text", Text: text}}
	}
	var bs []contentBlock
	if json.Unmarshal(raw, &bs) != nil {
		return nil
	}
	return bs
}

func (a *Anthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.record(Request{Method: r.Method, Path: r.URL.Path, Body: body})
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		writeJSON(w, map[string]int{"input_tokens": 1 + len(body)/4})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		var req messagesRequest
		if err := json.Unmarshal(body, &req); err != nil {
			anthropicError(w, http.StatusBadRequest, "invalid_request_error", "body is not a Messages request: "+err.Error())
			return
		}
		turn := Say(DefaultReply)
		idx := 0
		// Only the agent's loop declares tools; side requests (a title,
		// a summary) get the default text.
		if len(req.Tools) > 0 {
			for _, m := range req.Messages {
				if m.Role == "assistant" {
					idx++
				}
			}
			turn = a.turn(idx)
		}
		msg, err := anthropicMessage(req.Model, turn, idx)
		if err != nil {
			anthropicError(w, http.StatusInternalServerError, "api_error", err.Error())
			return
		}
		if req.Stream {
			streamAnthropic(w, msg)
			return
		}
		writeJSON(w, msg)
	default:
		anthropicError(w, http.StatusNotFound, "not_found_error", r.Method+" "+r.URL.Path+" is not scripted")
	}
}

// message is a Messages API response.
type message struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []contentBlock `json:"content"`
	StopReason   string         `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        map[string]int `json:"usage"`
}

func anthropicMessage(model string, t Turn, idx int) (*message, error) {
	m := &message{ID: fmt.Sprintf("msg_%02d", idx), Type: "message", Role: "assistant", Model: model,
		StopReason: "end_turn", Usage: map[string]int{"input_tokens": 10, "output_tokens": 10}}
	if t.Text != "" || len(t.Calls) == 0 {
		text := t.Text
		if text == "" {
			text = DefaultReply
		}
		m.Content = append(m.Content, contentBlock{Type: "text", Text: text})
	}
	for k, c := range t.Calls {
		in, err := inputJSON(c.Input)
		if err != nil {
			return nil, err
		}
		m.Content = append(m.Content, contentBlock{Type: "tool_use", ID: callID("toolu_", idx, k), Name: c.Name, Input: json.RawMessage(in)})
		m.StopReason = "tool_use"
	}
	return m, nil
}

// streamAnthropic sends msg as the Messages API's event stream: the
// message, each block's start, one delta and stop, and the stop reason.
func streamAnthropic(w http.ResponseWriter, m *message) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	start := *m
	start.Content = []contentBlock{}
	start.StopReason = ""
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": start.ID, "type": "message", "role": "assistant", "model": start.Model, "content": start.Content,
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}})
	for i, b := range m.Content {
		switch b.Type {
		case "text":
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b.Text}})
		case "tool_use":
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(b.Input)}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": m.StopReason, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 10}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
}

// ToolResults lists the tool results the agent sent, in the order of the
// calls, from the longest conversation recorded (each request repeats the
// ones before it).
func (a *Anthropic) ToolResults() []ToolResult {
	names := map[string]string{}
	var best []ToolResult
	for _, r := range a.Requests() {
		if r.Path != "/v1/messages" {
			continue
		}
		var req messagesRequest
		if json.Unmarshal(r.Body, &req) != nil {
			continue
		}
		var got []ToolResult
		// open is the index of the result whose context is being
		// collected: from its result to the model's next turn.
		open := -1
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				open = -1
			}
			for _, b := range blocksOf(m.Content) {
				switch b.Type {
				case "tool_use":
					names[b.ID] = b.Name
				case "tool_result":
					got = append(got, ToolResult{CallID: b.ToolUseID, Tool: names[b.ToolUseID], Text: joinText(b.Content), IsError: b.IsError})
					open = len(got) - 1
				case "text":
					if open >= 0 && m.Role != "assistant" {
						got[open].Context = strings.TrimLeft(got[open].Context+"\n"+b.Text, "\n")
					}
				}
			}
		}
		if len(got) >= len(best) {
			best = got
		}
	}
	return best
}

// Transcript renders what the model received, for a failing test's log:
// every tool result, one per line.
func Transcript(results []ToolResult) string {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "%s (%s, error=%v): %s\n", r.Tool, r.CallID, r.IsError, r.Text)
		if r.Context != "" {
			fmt.Fprintf(&b, "  then: %s\n", r.Context)
		}
	}
	return b.String()
}
