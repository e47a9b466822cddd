#!/bin/sh
# Installs or upgrades the yuzu agent on macOS from this tarball (no .pkg is built: the
# build machines have no tools for one; docs/packages.md). Run as root from the
# unpacked directory: sudo ./install.sh
#   /usr/local/yuzu/yuzu-agent                             the agent
#   /usr/local/yuzu/shipped-plugins/                       this tarball's plugin builds,
#                                                          which the agent installs into
#   /usr/local/yuzu/plugins/                               its plugin dir (catalog.json),
#                                                          keeping a newer one the fleet
#                                                          installed
#   /Library/Application Support/yuzu/agent.yaml          written from agent.yaml.default
#                                                          when missing, never replaced
#   /Library/LaunchDaemons/dev.yuzu.agent.plist            by `yuzu-agent service install`
# The data dir, /Library/Application Support/yuzu, is kept by upgrades and by
# uninstall.sh. Not tested on macOS by this repository's tests (there is none here).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=/usr/local/yuzu
support="/Library/Application Support/yuzu"
config="$support/agent.yaml"
if [ "$(id -u)" != 0 ]; then
	echo "install.sh: run it as root (sudo ./install.sh)" >&2
	exit 1
fi
# An installed service is removed first: `service install` refuses to replace one.
if [ -x "$dest/yuzu-agent" ]; then
	"$dest/yuzu-agent" --config "$config" service uninstall || true
fi
mkdir -p "$dest/plugins" "$dest/shipped-plugins" "$support" /Library/Logs/yuzu
chmod 0755 "$dest" "$dest/plugins" "$dest/shipped-plugins"
chmod 0700 "$support"
for f in "$here"/plugins/yuzu-plugin-*; do
	cp "$f" "$dest/shipped-plugins/.$(basename "$f").new"
	mv -f "$dest/shipped-plugins/.$(basename "$f").new" "$dest/shipped-plugins/$(basename "$f")"
done
chmod 0755 "$dest"/shipped-plugins/yuzu-plugin-*
cp "$here/yuzu-agent" "$dest/.yuzu-agent.new"
chmod 0755 "$dest/.yuzu-agent.new"
mv -f "$dest/.yuzu-agent.new" "$dest/yuzu-agent"
chown -R root:wheel "$dest"
if [ ! -e "$config" ]; then
	cp "$here/agent.yaml.default" "$config"
	chmod 0600 "$config"
	chown root:wheel "$config"
fi
cp "$here/agent.yaml.default" "$support/agent.yaml.default"
"$dest/yuzu-agent" --config "$config" --plugin-dir "$dest/plugins" plugins add --if-newer "$dest"/shipped-plugins/yuzu-plugin-*
"$dest/yuzu-agent" --config "$config" service install
echo "install.sh: yuzu agent $("$dest/yuzu-agent" --version) installed; edit $config and run"
echo "  sudo $dest/yuzu-agent service uninstall && sudo $dest/yuzu-agent service install"
