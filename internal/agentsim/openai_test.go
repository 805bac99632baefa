package agentsim

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestOpenAISendsEachCallInItsToolsForm(t *testing.T) {
	o := NewOpenAI(Call("apply_patch", "*** Begin Patch\n*** End Patch\n"), Call("exec_command", map[string]any{"cmd": "ls"}), Say("done"))
	defer o.Close()
	tools := `"tools":[{"type":"custom","name":"apply_patch"},{"type":"function","name":"exec_command"}]`

	// Turn one, streamed: a custom tool call with the patch as its input.
	evs := sseEvents(t, post(t, o.URL()+"/v1/responses", `{"model":"m","stream":true,`+tools+`,"input":[{"type":"message","role":"user","content":"go"}]}`))
	var types []string
	var item map[string]any
	for _, e := range evs {
		types = append(types, e[0])
		var d struct {
			Item map[string]any `json:"item"`
		}
		if err := json.Unmarshal([]byte(e[1]), &d); err != nil {
			t.Fatal(err)
		}
		if e[0] == "response.output_item.done" {
			item = d.Item
		}
	}
	if strings.Join(types, " ") != "response.created response.output_item.added response.output_item.done response.completed" ||
		item["type"] != "custom_tool_call" || item["input"] != "*** Begin Patch\n*** End Patch\n" || item["call_id"] != "call_00_0" {
		t.Errorf("events %v, item %v", types, item)
	}

	// Turn two, not streamed: the input holds one call, so a function
	// call with JSON arguments comes next; a hook's message between the
	// call and its output is that call's context.
	conv := `{"model":"m",` + tools + `,"input":[{"type":"message","role":"user","content":"go"},
	  {"type":"custom_tool_call","call_id":"call_00_0","name":"apply_patch","input":"p"},
	  {"type":"message","role":"developer","content":[{"type":"input_text","text":"a hook's context"}]},
	  {"type":"custom_tool_call_output","call_id":"call_00_0","output":"Command blocked"}]}`
	var resp struct{ Output []map[string]any }
	if err := json.NewDecoder(post(t, o.URL()+"/v1/responses", conv).Body).Decode(&resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Output) != 1 || resp.Output[0]["type"] != "function_call" || resp.Output[0]["name"] != "exec_command" || resp.Output[0]["arguments"] != `{"cmd":"ls"}` {
		t.Errorf("second turn: %v", resp.Output)
	}
	got := o.ToolResults()
	if len(got) != 1 || got[0] != (ToolResult{CallID: "call_00_0", Tool: "apply_patch", Text: "Command blocked", Context: "a hook's context"}) {
		t.Errorf("tool results %+v", got)
	}
}
