package main

import (
	"encoding/json"
)

func jsonOut(a *app) bool {
	v, _ := a.fs.GetBool("json")
	return v
}

func printJSON(a *app, v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func jsonIndent(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }
