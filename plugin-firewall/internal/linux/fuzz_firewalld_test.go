package linux

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/godbus/dbus/v5"
)

// FuzzFirewalldReply decodes arbitrary bytes as a D-Bus message, the way the client
// library decodes firewalld's replies, and hands the body to every reply decoder.
// Whatever arrives, they must not panic, and what they accept must have the shape
// they promise: sorted names from a{sa{sas}}, one string from s, and settings with a
// target from a{sv} or the settings tuple.
func FuzzFirewalldReply(f *testing.F) {
	for _, body := range [][]any{
		{map[string]map[string][]string{"public": {"interfaces": {"veth0"}}, "trusted": {"sources": {"10.0.0.0/8"}}}},
		{"public"},
		{map[string]dbus.Variant{"target": dbus.MakeVariant("default"), "services": dbus.MakeVariant([]string{"ssh"}),
			"ports": dbus.MakeVariant([]struct{ P, Q string }{{"8080", "tcp"}})}},
		{struct {
			V, S, D string
			U       bool
			T       string
			Svc     []string
		}{"", "", "", false, "ACCEPT", []string{"ssh"}}},
		{map[string]string{"public": "veth0"}},
		{int32(7)},
		{},
	} {
		msg := &dbus.Message{Type: dbus.TypeMethodReply, Headers: map[dbus.HeaderField]dbus.Variant{
			dbus.FieldReplySerial: dbus.MakeVariant(uint32(1)),
		}, Body: body}
		if len(body) > 0 {
			msg.Headers[dbus.FieldSignature] = dbus.MakeVariant(dbus.SignatureOf(body...))
		}
		var buf bytes.Buffer
		if err := msg.EncodeTo(&buf, binary.LittleEndian); err != nil {
			f.Fatal(err)
		}
		// The library leaves the serial to the connection; a decodable message needs
		// one, at bytes 8 to 11 of the fixed header.
		seed := buf.Bytes()
		binary.LittleEndian.PutUint32(seed[8:12], 1)
		if _, err := dbus.DecodeMessage(bytes.NewReader(seed)); err != nil {
			f.Fatalf("seed %v does not decode: %v", body, err)
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, err := dbus.DecodeMessage(bytes.NewReader(data))
		if err != nil {
			return
		}
		if names, ok := decodeActive(msg.Body); ok {
			if !slices.IsSorted(names) {
				t.Fatalf("names not sorted: %q", names)
			}
			m := msg.Body[0].(map[string]map[string][]string)
			if len(names) != len(m) {
				t.Fatalf("%d names from %d entries", len(names), len(m))
			}
		}
		if s, ok := decodeString(msg.Body); ok && len(msg.Body) != 1 {
			t.Fatalf("accepted %q from a body of %d values", s, len(msg.Body))
		}
		for _, decode := range []func([]any, string) (Zone, bool){decodeSettings, decodeSettingsTuple} {
			if z, ok := decode(msg.Body, "z"); ok {
				if z.Target == "" || z.Name != "z" {
					t.Fatalf("accepted settings without a target: %+v", z)
				}
				for _, r := range zoneRows("z", z) {
					if len(r.Fields) != 4 {
						t.Fatalf("row %q", r.Text())
					}
				}
			}
		}
	})
}
