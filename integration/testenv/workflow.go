package testenv

// WorkflowPolicy is the policy of the intent workflow tests.
const WorkflowPolicy = `# Policy for the workflow test. This comment must survive write-back.
active_intents:
  - id: INT-001
    name: "Greeting service"
    status: PENDING
    owned_scope:
      - "src/**"
    constraints:
      - "Keep it friendly"
    acceptance_criteria:
      - text: "the greeting exists"
        check: "test -s src/greeting.txt"
      - "a human likes it"
    related_specs:
      - type: speckit
        ref: specs/greeting.md
  - id: INT-002
    name: "Docs"
    status: BLOCKED
    owned_scope: ["docs/**"]
`
