package wire

import (
	"net"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"

	"github.com/yuzugo/yuzu/sdk/internal/pluginv1"
)

func TestReattachRoundTrip(t *testing.T) {
	rc := &plugin.ReattachConfig{Protocol: plugin.ProtocolGRPC, ProtocolVersion: 1, Addr: &net.UnixAddr{Name: "/tmp/p.sock", Net: "unix"}, Pid: 42}
	line, err := EncodeReattach(rc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeReattach(ReattachEnv + "=" + line + "\n")
	if err != nil || got.Addr.String() != "/tmp/p.sock" || got.Pid != 42 || !got.Test || got.ProtocolVersion != 1 {
		t.Fatalf("DecodeReattach = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "{", `{"protocol":"netrpc","protocol_version":1,"network":"unix","address":"/x"}`,
		`{"protocol":"grpc","protocol_version":2,"network":"unix","address":"/x"}`,
		`{"protocol":"grpc","protocol_version":1,"network":"udp","address":"/x"}`} {
		if _, err := DecodeReattach(bad); err == nil || !strings.HasPrefix(err.Error(), "reattach line: ") {
			t.Errorf("DecodeReattach(%q) = %v, want a reattach line error", bad, err)
		}
	}
}

type fakePlugin struct{ name string }

type fakeServer struct {
	pluginv1.UnimplementedPluginServiceServer
	p *fakePlugin
}

// The factory answers for the type it was registered with and refuses any other.
func TestServerFactory(t *testing.T) {
	old := serverFactory
	t.Cleanup(func() { serverFactory = old })
	RegisterServer(func(p *fakePlugin) pluginv1.PluginServiceServer { return &fakeServer{p: p} })
	p := &fakePlugin{name: "x"}
	srv, err := NewServer(p)
	if fs, ok := srv.(*fakeServer); err != nil || !ok || fs.p != p {
		t.Fatalf("NewServer = %v, %v; want the registered factory's server for p", srv, err)
	}
	if _, err := NewServer("not a plugin"); err == nil || !strings.Contains(err.Error(), "no server factory registered for string") {
		t.Errorf("NewServer of another type: %v, want no factory", err)
	}
}
