package agentsim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
)

// OpenAI is a scripted OpenAI Responses API: POST /v1/responses, streamed
// as server-sent events (or not). Point Codex at it with a model provider
// whose base_url is URL()+"/v1" and wire_api = "responses".
//
// A call is sent in the form the agent declared its tool: a "custom"
// (free-form) tool, such as Codex's apply_patch, gets a custom_tool_call
// whose input is the call's Input string; a function gets a function_call
// whose arguments are the Input as JSON.
type OpenAI struct {
	recorder
	srv *httptest.Server
}

// NewOpenAI starts a server on a loopback port that plays script.
func NewOpenAI(script ...Turn) *OpenAI {
	o := &OpenAI{recorder: recorder{script: script}}
	o.srv = httptest.NewServer(http.HandlerFunc(o.serve))
	return o
}

// URL is the server's base URL (http://127.0.0.1:PORT).
func (o *OpenAI) URL() string { return o.srv.URL }

// Close stops the server.
func (o *OpenAI) Close() { o.srv.Close() }

// responsesRequest is the part of a Responses request the server reads.
type responsesRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	Input []json.RawMessage `json:"input"`
}

// inputItem is one item of a Responses request's input.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Name    string          `json:"name"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
	Content json.RawMessage `json:"content"`
}

// isCall reports whether an input item is a tool call of the model.
func isCall(typ string) bool {
	return typ == "function_call" || typ == "custom_tool_call" || typ == "local_shell_call"
}

func (o *OpenAI) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.record(Request{Method: r.Method, Path: r.URL.Path, Body: body})
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		openaiError(w, http.StatusNotFound, r.Method+" "+r.URL.Path+" is not scripted")
		return
	}
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		openaiError(w, http.StatusBadRequest, "body is not a Responses request: "+err.Error())
		return
	}
	calls := 0
	for _, raw := range req.Input {
		var it inputItem
		if json.Unmarshal(raw, &it) == nil && isCall(it.Type) {
			calls++
		}
	}
	idx := o.turnAfterCalls(calls)
	turn := Say(DefaultReply)
	if len(req.Tools) > 0 {
		turn = o.turn(idx)
	}
	kinds := map[string]string{}
	for _, t := range req.Tools {
		kinds[t.Name] = t.Type
	}
	items, err := responseItems(turn, idx, kinds)
	if err != nil {
		openaiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	id := fmt.Sprintf("resp_%02d", idx)
	resp := map[string]any{"id": id, "object": "response", "status": "completed", "model": req.Model, "output": items,
		"usage": map[string]any{"input_tokens": 10, "input_tokens_details": map[string]int{"cached_tokens": 0},
			"output_tokens": 10, "output_tokens_details": map[string]int{"reasoning_tokens": 0}, "total_tokens": 20}}
	if !req.Stream {
		writeJSON(w, resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	for i, it := range items {
		sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": i, "item": it})
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": resp})
}

// responseItems are a turn's output items: a message with the text, then
// each call in the form its tool was declared.
func responseItems(t Turn, idx int, kinds map[string]string) ([]map[string]any, error) {
	var items []map[string]any
	if t.Text != "" || len(t.Calls) == 0 {
		text := t.Text
		if text == "" {
			text = DefaultReply
		}
		items = append(items, map[string]any{"type": "message", "id": fmt.Sprintf("msg_%02d", idx), "role": "assistant", "status": "completed",
			"content": []map[string]any{{"type": "output_text", "text": text, "annotations": []any{}}}})
	}
	for k, c := range t.Calls {
		in, err := inputJSON(c.Input)
		if err != nil {
			return nil, err
		}
		id := callID("call_", idx, k)
		if kinds[c.Name] == "custom" {
			items = append(items, map[string]any{"type": "custom_tool_call", "id": "ctc_" + id, "call_id": id, "name": c.Name, "input": in, "status": "completed"})
			continue
		}
		if _, isText := c.Input.(string); isText {
			// A free-form input to a function tool: the argument the
			// function declares for it is "input".
			b, _ := json.Marshal(map[string]string{"input": in})
			in = string(b)
		}
		items = append(items, map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "name": c.Name, "arguments": in, "status": "completed"})
	}
	return items, nil
}

func openaiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"type": "invalid_request_error", "message": msg}})
}

// ToolResults lists the tool outputs the agent sent, in the order of the
// calls, from the longest conversation recorded. Context is the text of
// the messages the agent added after an output (a hook's context).
func (o *OpenAI) ToolResults() []ToolResult {
	var best []ToolResult
	for _, r := range o.Requests() {
		if r.Path != "/v1/responses" {
			continue
		}
		var req responsesRequest
		if json.Unmarshal(r.Body, &req) != nil {
			continue
		}
		names := map[string]string{}
		// Codex puts a hook's context between a call and its output:
		// a message belongs to the last call before it.
		context := map[string]string{}
		last := ""
		var got []ToolResult
		for _, raw := range req.Input {
			var it inputItem
			if json.Unmarshal(raw, &it) != nil {
				continue
			}
			switch {
			case isCall(it.Type):
				names[it.CallID] = it.Name
				last = it.CallID
			case it.Type == "function_call_output" || it.Type == "custom_tool_call_output":
				got = append(got, ToolResult{CallID: it.CallID, Tool: names[it.CallID], Text: outputText(it.Output)})
			case it.Type == "message" && it.Role == "assistant":
				last = ""
			case it.Type == "message" && last != "":
				context[last] = strings.TrimLeft(context[last]+"\n"+messageText(it.Content), "\n")
			}
		}
		for i := range got {
			got[i].Context = context[got[i].CallID]
		}
		if len(got) >= len(best) {
			best = got
		}
	}
	return best
}

// outputText is a tool output as the model reads it: a string, an object
// with an "output" or "content" string, or a list of text parts.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Output  *string         `json:"output"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		if obj.Output != nil {
			return *obj.Output
		}
		if len(obj.Content) > 0 {
			return joinText(obj.Content)
		}
	}
	return joinText(raw)
}

// messageText joins the text parts of a message's content.
func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return joinText(raw)
}
