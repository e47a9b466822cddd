#!/bin/sh
# Removes the yuzu agent that install.sh installed: the launchd daemon and
# /usr/local/yuzu. The configuration and the data dir (/Library/Application
# Support/yuzu) are kept; delete that directory by hand to forget this agent.
set -eu
dest=/usr/local/yuzu
if [ "$(id -u)" != 0 ]; then
	echo "uninstall.sh: run it as root (sudo ./uninstall.sh)" >&2
	exit 1
fi
if [ -x "$dest/yuzu-agent" ]; then
	"$dest/yuzu-agent" --config "/Library/Application Support/yuzu/agent.yaml" service uninstall
fi
rm -rf "$dest"
echo "uninstall.sh: removed; /Library/Application Support/yuzu is kept"
