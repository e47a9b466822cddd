package windows

import (
	"syscall"
	"unicode/utf16"
	"unsafe"

	win "golang.org/x/sys/windows"
)

// The COM calls are made straight through each interface's method table with
// syscall.SyscallN: a handful of getters does not justify a COM binding library.
// Every call converts its pointers inside the SyscallN argument list, which is what
// keeps the Go values they point to alive and in place for the call.

var (
	ole32                = win.NewLazySystemDLL("ole32.dll")
	oleaut32             = win.NewLazySystemDLL("oleaut32.dll")
	procCoCreateInstance = ole32.NewProc("CoCreateInstance")
	procSysFreeString    = oleaut32.NewProc("SysFreeString")
	procSysStringLen     = oleaut32.NewProc("SysStringLen")
	procVariantClear     = oleaut32.NewProc("VariantClear")
)

// Class and interface identifiers.
var (
	clsidNetFwPolicy2 = win.GUID{Data1: 0xE2B3C97F, Data2: 0x6AE1, Data3: 0x41AC,
		Data4: [8]byte{0x81, 0x7A, 0xF6, 0xF9, 0x21, 0x66, 0xD7, 0xDD}}
	iidINetFwPolicy2 = win.GUID{Data1: 0x98325047, Data2: 0xC671, Data3: 0x4174,
		Data4: [8]byte{0x8D, 0x81, 0xDE, 0xFC, 0xD3, 0xF0, 0x31, 0x86}}
	iidINetFwRule = win.GUID{Data1: 0xAF230D27, Data2: 0xBABA, Data3: 0x4E42,
		Data4: [8]byte{0xAC, 0xED, 0xF5, 0x24, 0xF2, 0x2C, 0xFC, 0xE2}}
	iidIEnumVARIANT = win.GUID{Data1: 0x00020404, Data2: 0x0000, Data3: 0x0000,
		Data4: [8]byte{0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46}}
)

// Method-table slots. Every interface here starts with IUnknown (0-2); the dispatch
// interfaces add IDispatch's four methods (3-6) before their own.
const (
	slotQueryInterface = 0
	slotRelease        = 2

	// INetFwPolicy2
	slotPolicyGetFirewallEnabled = 8
	slotPolicyGetRules           = 18

	// INetFwRules
	slotRulesGetCount   = 7
	slotRulesGetNewEnum = 11

	// IEnumVARIANT
	slotEnumNext = 3

	// INetFwRule: each property has a getter and a setter, getters first.
	slotRuleGetName      = 7
	slotRuleGetDirection = 27
	slotRuleGetEnabled   = 33
	slotRuleGetProfiles  = 37
	slotRuleGetAction    = 41
)

// Constants from the Windows headers.
const (
	clsctxInprocServer = 0x1
	vtDispatch         = 9
	eAbort             = 0x80004004 // E_ABORT
	ePointer           = 0x80004003 // E_POINTER: a call succeeded but returned no object
	rpcEChangedMode    = 0x80010106 // COM already initialised on this thread in another mode
)

// comObject is a COM interface pointer: its first word points at the method table.
// The memory belongs to COM, never to Go.
type comObject struct {
	vtbl *[64]uintptr
}

func (o *comObject) release() {
	if o != nil {
		_, _, _ = syscall.SyscallN(o.vtbl[slotRelease], uintptr(unsafe.Pointer(o)))
	}
}

func (o *comObject) queryInterface(iid *win.GUID) (*comObject, uint32) {
	var out *comObject
	r, _, _ := syscall.SyscallN(o.vtbl[slotQueryInterface], uintptr(unsafe.Pointer(o)),
		uintptr(unsafe.Pointer(iid)), uintptr(unsafe.Pointer(&out)))
	return checked(out, uint32(r))
}

// getObject calls a getter whose only argument is where to store an interface pointer.
func (o *comObject) getObject(slot int) (*comObject, uint32) {
	var out *comObject
	r, _, _ := syscall.SyscallN(o.vtbl[slot], uintptr(unsafe.Pointer(o)), uintptr(unsafe.Pointer(&out)))
	return checked(out, uint32(r))
}

// checked turns "succeeded without an object" into E_POINTER and releases an object
// handed back alongside a failure, so callers only ever see an object with S_OK.
func checked(o *comObject, hr uint32) (*comObject, uint32) {
	switch {
	case hr != sOK:
		o.release()
		return nil, hr
	case o == nil:
		return nil, ePointer
	}
	return o, hr
}

// getInt32 calls a getter whose only argument is where to store a 32-bit value.
func (o *comObject) getInt32(slot int) (int32, uint32) {
	var v int32
	r, _, _ := syscall.SyscallN(o.vtbl[slot], uintptr(unsafe.Pointer(o)), uintptr(unsafe.Pointer(&v)))
	return v, uint32(r)
}

// getBool calls a getter storing a VARIANT_BOOL (0 false, anything else true).
func (o *comObject) getBool(slot int) (bool, uint32) {
	var v int16
	r, _, _ := syscall.SyscallN(o.vtbl[slot], uintptr(unsafe.Pointer(o)), uintptr(unsafe.Pointer(&v)))
	return v != 0, uint32(r)
}

// getString calls a getter storing a BSTR, copies it into a Go string and frees it.
// A null BSTR is the empty string.
func (o *comObject) getString(slot int) (string, uint32) {
	var b *uint16
	r, _, _ := syscall.SyscallN(o.vtbl[slot], uintptr(unsafe.Pointer(o)), uintptr(unsafe.Pointer(&b)))
	if b == nil {
		return "", uint32(r)
	}
	defer func() { _, _, _ = syscall.SyscallN(procSysFreeString.Addr(), uintptr(unsafe.Pointer(b))) }()
	if uint32(r) != sOK {
		return "", uint32(r)
	}
	n, _, _ := syscall.SyscallN(procSysStringLen.Addr(), uintptr(unsafe.Pointer(b)))
	return string(utf16.Decode(unsafe.Slice(b, int(uint32(n))))), sOK
}

// policyFirewallEnabled is INetFwPolicy2::get_FirewallEnabled.
func (o *comObject) policyFirewallEnabled(profile uint32) (bool, uint32) {
	var v int16
	r, _, _ := syscall.SyscallN(o.vtbl[slotPolicyGetFirewallEnabled], uintptr(unsafe.Pointer(o)),
		uintptr(profile), uintptr(unsafe.Pointer(&v)))
	return v != 0, uint32(r)
}

// variant is the VARIANT structure: a type tag, three reserved words, and a union as
// wide as two pointers (16 bytes on 32-bit Windows, 24 on 64-bit). Only the first
// word of the union is used here, as an IDispatch pointer when the tag says so.
type variant struct {
	vt  uint16
	_   [3]uint16
	val uintptr
	_   uintptr
}

// dispatch returns the IDispatch pointer the variant holds, or nil. Reading the word
// through a pointer conversion keeps a non-pointer value (for another tag) from ever
// being stored where the garbage collector would look at it as a pointer.
func (v *variant) dispatch() *comObject {
	if v.vt != vtDispatch {
		return nil
	}
	return *(**comObject)(unsafe.Pointer(&v.val))
}

func (v *variant) clear() {
	_, _, _ = syscall.SyscallN(procVariantClear.Addr(), uintptr(unsafe.Pointer(v)))
}

// enumNext is IEnumVARIANT::Next for one element.
func (o *comObject) enumNext(v *variant) (fetched bool, hr uint32) {
	var n uint32
	r, _, _ := syscall.SyscallN(o.vtbl[slotEnumNext], uintptr(unsafe.Pointer(o)), 1,
		uintptr(unsafe.Pointer(v)), uintptr(unsafe.Pointer(&n)))
	return n > 0, uint32(r)
}

// createPolicy creates the NetFwPolicy2 object in process.
func createPolicy() (*comObject, uint32) {
	var out *comObject
	r, _, _ := syscall.SyscallN(procCoCreateInstance.Addr(), uintptr(unsafe.Pointer(&clsidNetFwPolicy2)), 0,
		clsctxInprocServer, uintptr(unsafe.Pointer(&iidINetFwPolicy2)), uintptr(unsafe.Pointer(&out)))
	hr := uint32(r)
	if Failed(hr) {
		out.release()
		return nil, hr
	}
	if out == nil {
		return nil, ePointer
	}
	return out, hr
}
