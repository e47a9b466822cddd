package supervisor

import (
	"bytes"
	"context"
	"time"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
)

// Launcher starts children of plugin binaries. The supervisor's own launcher verifies
// the binary and starts it through go-plugin (see pluginLauncher); tests use a fake to
// drive the state machine without processes.
type Launcher interface {
	// Launch verifies b, starts one child of it and returns it described and
	// configured. A *RefusedError means the binary may never run as it is; any other
	// error is a failed start that a later attempt may not repeat.
	Launch(ctx context.Context, b Binary, cfg sdk.Config) (Child, error)
}

// Binary is one build of a plugin, as the catalog names it.
type Binary struct {
	// Name is the plugin's name.
	Name string
	// Path is where the binary is.
	Path string
	// Checksum is its SHA-256 from the catalog.
	Checksum []byte
	// Version is the version the catalog says the build has; the build's own word at
	// its start must agree. Empty when the catalog does not say (migrated from
	// plugins.sha256): then the build's word is taken.
	Version string
	// Build names the build for people ("2.0.0 (sha256 72e79a1b2c3d)") and Trust who
	// vouches for it ("unsigned", "signed by acme (key ...)").
	Build, Trust string
}

// same reports whether two descriptions name the same bytes at the same place.
func (b Binary) same(o Binary) bool {
	return b.Path == o.Path && bytes.Equal(b.Checksum, o.Checksum)
}

// Child is one running process of a plugin.
type Child interface {
	// Manifest is what the child said about itself at start.
	Manifest() host.Manifest
	// Execute runs one command; see host.Client.Execute.
	Execute(ctx context.Context, cmd host.Command, onRows func([]string) error) (sdk.Result, error)
	// Ping checks that the child answers within timeout.
	Ping(timeout time.Duration) error
	// Exited is closed once the process has ended, whoever ended it.
	Exited() <-chan struct{}
	// ExitStatus says how the process ended ("exit status 2", "killed by signal 9");
	// it is meaningful once Exited is closed.
	ExitStatus() string
	// Kill ends the process and everything it started, at once.
	Kill()
	// Stop ends the child gracefully: it closes the connection, which the plugin
	// takes as the signal to stop, and kills it after grace.
	Stop(grace time.Duration)
	// Pid is the child's process id, 0 for a fake.
	Pid() int
}
