package parse

import "strconv"

// Reason tokens for an nftables dump, as they appear after the dump name in error and
// fallthrough rows. The tokens foreign_flood, truncated and torn cannot arise
// through the netlink library used here (docs/firewall.md), so they have no constant.
const (
	ReasonOK             = "ok"
	ReasonTimeout        = "timeout"
	ReasonEPERM          = "eperm"
	ReasonErrnoUndecoded = "errno:undecoded"
	ReasonOversized      = "oversized"
	ReasonIOError        = "io_error"
)

// errnoEPERM is EPERM's number on Linux, the only kernel that answers nftables dumps.
// It is spelled out rather than taken from a syscall package so the token mapping stays
// the same whatever GOOS the tests run on.
const errnoEPERM = 1

// ErrnoReason is the token for an error number the kernel put in a netlink error
// message. The sign is dropped (the kernel sends it negated); EPERM gets its own token
// because "not allowed" is the common and actionable case, and 0 means the message
// carried no usable number.
func ErrnoReason(errno int) string {
	if errno < 0 {
		errno = -errno
		if errno < 0 { // the most negative int has no positive twin
			return ReasonErrnoUndecoded
		}
	}
	switch errno {
	case 0:
		return ReasonErrnoUndecoded
	case errnoEPERM:
		return ReasonEPERM
	default:
		return "errno:" + strconv.Itoa(errno)
	}
}
