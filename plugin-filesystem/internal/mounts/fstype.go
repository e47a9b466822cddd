package mounts

import "strings"

// networkTypes lists filesystem type names (as Linux mountinfo and macOS
// statfs spell them) whose data lives on another machine, so that a walk
// into them can block on an unreachable server. The list is a deny-list by
// name: a network filesystem under a name not listed here (for example a
// bare "fuse" mount) is not caught.
//
//   - NFS and SMB families: nfs, nfs4, cifs, smb3, smbfs, smb (old Linux
//     smbfs), ncpfs and ncp (NetWare).
//   - Distributed and cluster filesystems: afs (also kAFS), coda, ceph,
//     glusterfs, lustre, gpfs (IBM Storage Scale), beegfs, orangefs, pvfs2,
//     panfs, ocfs2 and gfs2 (shared-disk clusters whose lock manager talks
//     over the network and stalls when a node is lost), quobyte, xtreemfs,
//     wekafs, cvmfs, moosefs and lizardfs.
//   - Other remote protocols: 9p (also used for VM and WSL host shares, which
//     are just as able to hang), davfs and webdav, sshfs, ftp and curlftpfs,
//     afpfs (macOS AFP), mfs.
//   - FUSE front ends for remote storage, spelt fuse.<name> on Linux:
//     sshfs, s3fs, rclone, gcsfuse, goofys, blobfuse, blobfuse2, juicefs,
//     glusterfs, ceph-fuse, cephfs, curlftpfs, davfs2, gvfsd-fuse (GNOME's
//     gateway to SMB, SFTP and WebDAV shares), mfs, lizardfs, cvmfs2,
//     quobyte, s3backer, ossfs, cos-fuse, mountpoint-s3.
var networkTypes = setOf(
	"nfs", "nfs4", "cifs", "smb3", "smbfs", "smb", "ncpfs", "ncp",
	"afs", "coda", "ceph", "glusterfs", "lustre", "gpfs", "beegfs",
	"orangefs", "pvfs2", "panfs", "ocfs2", "gfs2", "quobyte", "xtreemfs",
	"wekafs", "cvmfs", "moosefs", "lizardfs",
	"9p", "davfs", "webdav", "sshfs", "ftp", "curlftpfs", "afpfs", "mfs",
	"fuse.sshfs", "fuse.s3fs", "fuse.rclone", "fuse.gcsfuse", "fuse.goofys",
	"fuse.blobfuse", "fuse.blobfuse2", "fuse.juicefs", "fuse.glusterfs",
	"fuse.ceph-fuse", "fuse.cephfs", "fuse.curlftpfs", "fuse.davfs2",
	"fuse.gvfsd-fuse", "fuse.mfs", "fuse.lizardfs", "fuse.cvmfs2",
	"fuse.quobyte", "fuse.s3backer", "fuse.ossfs", "fuse.cos-fuse",
	"fuse.mountpoint-s3",
)

// pseudoTypes lists kernel and virtual filesystems that hold no ordinary
// files: reading their entries is at best pointless for a hash search and
// at worst blocks (/proc/kmsg, trace pipes) or never ends (/sys, /proc).
// A walk counts such a directory as unreadable instead of entering it.
//
//   - Linux process, device and kernel-state views: proc, sysfs, devtmpfs,
//     devpts, cgroup, cgroup2, debugfs, tracefs, securityfs, pstore, bpf,
//     configfs, fusectl, mqueue, hugetlbfs, binfmt_misc, efivarfs,
//     selinuxfs, smackfs, apparmorfs, rpc_pipefs, nsfs, nfsd, usbfs,
//     xenfs, openpromfs, spufs, functionfs, gadgetfs, oprofilefs, ipathfs,
//     pipefs, sockfs, anon_inodefs.
//   - autofs: an automount trigger; entering it would start the mount it
//     stands for, often a network one. Once mounted, the real filesystem is
//     listed later on the same point and wins.
//   - fuse.lxcfs: a FUSE view of /proc and /sys files inside containers.
//   - BSD and macOS: devfs, fdesc, procfs, kernfs, linprocfs, linsysfs.
//     nullfs is deliberately absent: it re-mounts real files.
var pseudoTypes = setOf(
	"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs",
	"tracefs", "securityfs", "pstore", "bpf", "configfs", "fusectl",
	"mqueue", "hugetlbfs", "binfmt_misc", "efivarfs", "selinuxfs",
	"smackfs", "apparmorfs", "rpc_pipefs", "nsfs", "nfsd", "usbfs", "xenfs",
	"openpromfs", "spufs", "functionfs", "gadgetfs", "oprofilefs",
	"ipathfs", "pipefs", "sockfs", "anon_inodefs",
	"autofs", "fuse.lxcfs",
	"devfs", "fdesc", "procfs", "kernfs", "linprocfs", "linsysfs",
)

func setOf(names ...string) map[string]struct{} {
	m := make(map[string]struct{}, len(names))
	for _, n := range names {
		m[n] = struct{}{}
	}
	return m
}

// ClassifyType classifies a filesystem type name. Names are compared in
// lower case. Anything not on the network or pseudo list is Local.
func ClassifyType(fstype string) Class {
	t := strings.ToLower(fstype)
	if _, ok := pseudoTypes[t]; ok {
		return Pseudo
	}
	if _, ok := networkTypes[t]; ok {
		return Network
	}
	return Local
}

// macFUSETypes are the type names macOS reports for every FUSE mount, whatever
// daemon serves it (macFUSE 4 and later say macfuse; OSXFUSE 3 said osxfuse, older
// releases osxfusefs; fusefs is MacFUSE's and FreeBSD's).
var macFUSETypes = setOf("macfuse", "osxfuse", "osxfusefs", "fusefs")

// isFUSE reports whether t (lower case) names a FUSE mount whose type does not say
// what serves it: the macOS names, Linux's bare "fuse", and Linux's "fuse.<daemon>".
// fuseblk is not one: the kernel mounts it on a local block device.
func isFUSE(t string) bool {
	_, mac := macFUSETypes[t]
	return mac || t == "fuse" || strings.HasPrefix(t, "fuse.")
}

// ClassifyMount classifies one mount from its type name, its source (what mount
// shows before " on ") and the OS's own "not local" flag (macOS's MNT_LOCAL clear).
//
// FUSE mounts have a rule of their own, because on them neither the type nor the flag
// tells where the data lives: macOS names every FUSE mount macfuse (or osxfuse), an
// sshfs mount included, and marks it local or not as whoever mounted it asked with
// "-o local". So a FUSE mount is judged by what it serves:
//
//  1. a type on the network or pseudo list (fuse.sshfs, fuse.lxcfs, ...) decides;
//  2. a source that names another machine is network: "[user@]host:path" (a colon
//     before any slash, as sshfs and rclone write it), "//host/share" or
//     "scheme://...";
//  3. a source that is an absolute path is local: a device node such as /dev/disk4s1
//     (an attached disk image or local disk) or a file or directory on this machine;
//  4. on Linux, fuse.<daemon> for a daemon not on the network list stays local, as
//     before: the kernel names the daemon and the list holds the remote ones;
//  5. anything else, such as macFUSE's default "<daemon>@macfuse0", a bare name or an
//     empty source, is network: the daemon is unknown and may be remote, and treating
//     it as network only costs a skipped walk, while the other mistake can hang one.
//
// Every other type is classified by ClassifyType, then by the flag.
func ClassifyMount(fstype, source string, remote bool) Class {
	t := strings.ToLower(fstype)
	if !isFUSE(t) {
		if c := ClassifyType(t); c != Local {
			return c
		}
		if remote {
			return Network
		}
		return Local
	}
	if c := ClassifyType(t); c != Local {
		return c
	}
	switch {
	case remoteSource(source):
		return Network
	case strings.HasPrefix(source, "/"):
		return Local
	case strings.HasPrefix(t, "fuse."):
		return Local
	}
	return Network
}

// remoteSource reports whether a mount source names another machine.
func remoteSource(s string) bool {
	if strings.HasPrefix(s, "//") || strings.Contains(s, "://") {
		return true
	}
	colon := strings.IndexByte(s, ':')
	if colon <= 0 {
		return false
	}
	// "host:path" or "user@host:path": a colon with no slash before it. An absolute
	// path with a colon in it (/Volumes/a:b) has its slash first.
	return !strings.Contains(s[:colon], "/")
}

// NetworkTypes returns the network type names, for documentation and tests.
func NetworkTypes() []string { return keys(networkTypes) }

// PseudoTypes returns the pseudo type names, for documentation and tests.
func PseudoTypes() []string { return keys(pseudoTypes) }

func keys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
