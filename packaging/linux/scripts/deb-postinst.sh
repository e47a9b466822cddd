# Debian postinst: `configure` on install and upgrade (dpkg runs it after the new files
# are in place); abort-* when dpkg backs out of a failed upgrade or removal, where the
# old version's agent is started again.
case "$1" in
configure)
	install_agent
	install_plugins
	start_service
	;;
abort-upgrade | abort-remove | abort-deconfigure)
	if systemd_running; then
		systemctl start "$unit" || say "warning: could not start $unit again"
	fi
	;;
esac
exit 0
