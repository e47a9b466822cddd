# Debian prerm: `remove` stops and disables the service. `upgrade` leaves it running:
# the new version's postinst restarts it (the running agent's binary is under
# /opt/yuzu, which unpacking the new package does not touch).
case "$1" in
remove | deconfigure)
	stop_service
	;;
esac
exit 0
