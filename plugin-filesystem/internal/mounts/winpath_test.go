package mounts

import "testing"

func TestWindowsVolume(t *testing.T) {
	tests := []struct {
		in        string
		want      Class
		wantDrive string
	}{
		{`\\server\share\dir`, Network, ""},
		{`//server/share`, Network, ""},
		{`\\?\C:\Windows`, Network, ""},
		{`\\?\UNC\server\share`, Network, ""},
		{`\\.\PhysicalDrive0`, Network, ""},
		{`\/mixed`, Network, ""},
		{`C:\Windows\System32`, Local, `C:\`},
		{`d:/data`, Local, `d:\`},
		{`Z:`, Local, `Z:\`},
		{`\Windows`, Local, ""},
		{`relative\dir`, Local, ""},
		{`1:\x`, Local, ""},
		{``, Local, ""},
	}
	for _, tt := range tests {
		c, d := WindowsVolume(tt.in)
		if c != tt.want || d != tt.wantDrive {
			t.Errorf("WindowsVolume(%q) = %v, %q; want %v, %q", tt.in, c, d, tt.want, tt.wantDrive)
		}
	}
}

func TestClassifyDriveType(t *testing.T) {
	tests := []struct {
		t    uint32
		want Class
	}{
		{driveFixed, Local},
		{driveNoRootDir, Local},
		{driveRemote, Network},
		{driveRemovable, Network},
		{driveCDROM, Network},
		{driveRAMDisk, Network},
		{driveUnknown, Network},
		{99, Network},
	}
	for _, tt := range tests {
		if got := classifyDriveType(tt.t); got != tt.want {
			t.Errorf("classifyDriveType(%d) = %v, want %v", tt.t, got, tt.want)
		}
	}
}
