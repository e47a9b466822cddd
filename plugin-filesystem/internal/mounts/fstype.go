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
