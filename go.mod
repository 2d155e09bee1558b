module cwm

go 1.26.0

require (
	github.com/coder/websocket v1.8.15
	github.com/google/go-cmp v0.7.0
	github.com/openai/openai-go/v3 v3.98.0
	github.com/rogpeppe/go-internal v1.16.0
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
