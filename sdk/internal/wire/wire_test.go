package wire

import (
	"net"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"
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
