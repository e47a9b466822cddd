package linux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"
)

// firewalld's well-known name and its object.
const (
	firewalldDest = "org.fedoraproject.FirewallD1"
	firewalldPath = dbus.ObjectPath("/org/fedoraproject/FirewallD1")
)

// defaultSystemBus is where the system bus listens when DBUS_SYSTEM_BUS_ADDRESS is
// not set.
const defaultSystemBus = "unix:path=/run/dbus/system_bus_socket"

// errBusAddress is returned for a bus address this reader refuses to use.
var errBusAddress = errors.New("system bus address must use the unix transport")

// systemBusAddress returns the system bus address: DBUS_SYSTEM_BUS_ADDRESS when set
// (so a test or a container can point at another bus), the standard socket otherwise.
// Only unix-socket addresses are accepted: D-Bus also defines transports that run a
// program or reach out over TCP, and a read-only plugin has no business doing either.
func systemBusAddress() (string, error) {
	addr := os.Getenv("DBUS_SYSTEM_BUS_ADDRESS")
	if addr == "" {
		return defaultSystemBus, nil
	}
	for _, a := range strings.Split(addr, ";") {
		if !strings.HasPrefix(a, "unix:") {
			return "", fmt.Errorf("%q: %w", addr, errBusAddress)
		}
	}
	return addr, nil
}

// connectSystemBus opens a private connection to the system bus. The connection is
// tied to ctx: when ctx ends the library closes it, which also unblocks an
// authentication handshake that a stuck bus never answers.
func connectSystemBus(ctx context.Context) (busCaller, error) {
	addr, err := systemBusAddress()
	if err != nil {
		return nil, err
	}
	// EXTERNAL (the kernel-vouched uid) is the only mechanism offered: the library's
	// fallback would read cookie files from the home directory.
	auth := dbus.WithAuth(dbus.AuthExternal(strconv.Itoa(os.Geteuid())))
	conn, err := dbus.Connect(addr, dbus.WithContext(ctx), auth)
	if err != nil {
		return nil, fmt.Errorf("firewalld: connect %s: %w", addr, err)
	}
	return &dbusCaller{conn: conn}, nil
}

// dbusCaller calls methods of firewalld's interfaces over one connection.
type dbusCaller struct{ conn *dbus.Conn }

func (c *dbusCaller) Call(ctx context.Context, iface, method string, args ...any) ([]any, error) {
	call := c.conn.Object(firewalldDest, firewalldPath).CallWithContext(ctx, iface+"."+method, 0, args...)
	if call.Err != nil {
		var derr dbus.Error
		if errors.As(call.Err, &derr) && (derr.Name == "org.freedesktop.DBus.Error.UnknownMethod" ||
			derr.Name == "org.freedesktop.DBus.Error.UnknownInterface") {
			return nil, fmt.Errorf("firewalld: %s: %w: %w", method, errNoMethod, call.Err)
		}
		return nil, fmt.Errorf("firewalld: %s: %w", method, call.Err)
	}
	return call.Body, nil
}

func (c *dbusCaller) Close() error { return c.conn.Close() }
