# Debian postrm: `remove` tells systemd its unit is gone; `purge` deletes the data dir
# and the agent's tree (dpkg itself deletes /etc/yuzu/agent.yaml, a conffile). A
# removed but not purged package keeps /var/lib/yuzu (agent id, tags, journal) and
# /opt/yuzu for a later install.
case "$1" in
remove)
	daemon_reload
	;;
purge)
	daemon_reload
	rm -rf "$data_dir" "$opt"
	rm -f /etc/yuzu/agent.yaml.dpkg-old /etc/yuzu/agent.yaml.dpkg-new /etc/yuzu/agent.yaml.dpkg-dist
	rmdir /etc/yuzu 2>/dev/null || true
	say "purged: $data_dir and $opt deleted"
	;;
esac
exit 0
