# RPM %postun: $1 is 0 on a real erase (then the agent's tree /opt/yuzu goes; RPM has no
# purge, so the data dir /var/lib/yuzu stays, and an edited /etc/yuzu/agent.yaml is
# kept by RPM as agent.yaml.rpmsave), 1 on an upgrade (nothing to do).
if [ "${1:-0}" -eq 0 ]; then
	daemon_reload
	rm -rf "$opt"
	say "removed $opt; the data dir $data_dir is kept (delete it by hand to forget this agent)"
fi
exit 0
