# RPM %post: $1 is 1 on install, 2 (or more) on upgrade; both install this version's
# agent and plugins and (re)start the service. On an upgrade, the old package's
# %preun and %postun run after this script: they act only when $1 is 0, a real erase.
install_agent
install_plugins
start_service
