package agentsim

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sseEvents reads a server-sent event stream into (event, data) pairs.
func sseEvents(t *testing.T, resp *http.Response) [][2]string {
	t.Helper()
	var out [][2]string
	var ev string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			ev = e
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, [2]string{ev, d})
		}
	}
	return out
}

func TestAnthropicPlaysTheScriptByConversationLength(t *testing.T) {
	a := NewAnthropic(Call("Write", map[string]any{"file_path": "a.txt", "content": "x"}), Say("all done"))
	defer a.Close()
	tools := `"tools":[{"name":"Write"}]`

	// The first turn, streamed: a tool_use block whose input arrives as
	// one JSON delta, and stop_reason tool_use.
	evs := sseEvents(t, post(t, a.URL()+"/v1/messages", `{"model":"m","stream":true,`+tools+`,"messages":[{"role":"user","content":"go"}]}`))
	var names []string
	var input, stop string
	for _, e := range evs {
		names = append(names, e[0])
		var d struct {
			ContentBlock struct{ Type, Name string } `json:"content_block"`
			Delta        struct {
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
		}
		if err := json.Unmarshal([]byte(e[1]), &d); err != nil {
			t.Fatalf("%s: %v", e[1], err)
		}
		if d.ContentBlock.Type == "tool_use" && d.ContentBlock.Name != "Write" {
			t.Errorf("tool %q", d.ContentBlock.Name)
		}
		input += d.Delta.PartialJSON
		if d.Delta.StopReason != "" {
			stop = d.Delta.StopReason
		}
	}
	want := "message_start content_block_start content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(names, " ") != want || input != `{"content":"x","file_path":"a.txt"}` || stop != "tool_use" {
		t.Errorf("events %v, input %s, stop %q", names, input, stop)
	}

	// The second turn, not streamed: the conversation holds one model
	// turn and its result, so the script's second turn answers.
	conv := `{"model":"m",` + tools + `,"messages":[{"role":"user","content":"go"},
	  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_00_0","name":"Write","input":{}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_00_0","is_error":true,"content":[{"type":"text","text":"refused"}]}]},
	  {"role":"system","content":"a hook's context"}]}`
	var msg message
	if err := json.NewDecoder(post(t, a.URL()+"/v1/messages", conv).Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "all done" || msg.StopReason != "end_turn" {
		t.Errorf("second turn: %+v", msg)
	}
	// A side request (no tools) gets the default reply, whatever the
	// conversation's length.
	if err := json.NewDecoder(post(t, a.URL()+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"title?"}]}`).Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != DefaultReply {
		t.Errorf("side request: %+v", msg)
	}
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(post(t, a.URL()+"/v1/messages/count_tokens", conv).Body).Decode(&count); err != nil || count.InputTokens <= 0 {
		t.Errorf("count_tokens: %v %+v", err, count)
	}
	if resp := post(t, a.URL()+"/v1/other", "{}"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unscripted path: %s", resp.Status)
	}

	got := a.ToolResults()
	if len(got) != 1 || got[0] != (ToolResult{CallID: "toolu_00_0", Tool: "Write", Text: "refused", IsError: true, Context: "a hook's context"}) {
		t.Errorf("tool results %+v", got)
	}
	if n := len(a.Requests()); n != 5 {
		t.Errorf("%d requests recorded, want 5", n)
	}
}
