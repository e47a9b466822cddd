package subprocess

import "os"

const defaultPath = `C:\Windows\system32;C:\Windows`

func rootDir() string {
	if d := os.Getenv("SystemDrive"); d != "" {
		return d + `\`
	}
	return `C:\`
}
