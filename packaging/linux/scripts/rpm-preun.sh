# RPM %preun: $1 is 0 on a real erase, 1 when this package is being upgraded; the
# service is stopped and disabled only on an erase. (Disabling it here on an upgrade,
# after the new %post enabled it, is the classic bug this check avoids.)
if [ "${1:-0}" -eq 0 ]; then
	stop_service
fi
exit 0
