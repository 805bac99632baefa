module github.com/intentfs/intentfs

go 1.26.8

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hanwen/go-fuse/v2 v2.12.1 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
