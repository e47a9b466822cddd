@echo off
rem Run by the yuzu agent's MSI (custom action SetupData: deferred, as LocalSystem,
rem after the service is registered and before it starts), on install and upgrade:
rem   %1  the data dir, %ProgramData%\yuzu
rem The default configuration is beside this file (Program Files\yuzu). It exits
rem non-zero, failing the installation, when a step fails (docs/packages.md). Plain
rem `if errorlevel` after each command: Wine's cmd.exe reads `if ... cmd || exit`
rem differently from Windows'.
setlocal
set "DATA=%~1"
rem Already there on an upgrade: mkdir's complaint then means nothing.
mkdir "%DATA%" 2>nul
rem A protected DACL: SYSTEM and Administrators, full control, inherited by what is
rem made inside; nothing inherited from %ProgramData%, whose Users may create files
rem and folders. The agent's configuration, id, tags and journal live here. (Wine's
rem icacls is a stub that changes nothing and reports success: Wine makes every DACL
rem from Unix mode bits.)
icacls "%DATA%" /inheritance:r /grant:r "*S-1-5-18:(OI)(CI)F" "*S-1-5-32-544:(OI)(CI)F" >nul
if errorlevel 1 exit /b 11
rem The configuration is written once, from the default and the plugin dir, and never
rem replaced: an upgrade keeps what the operator wrote.
if exist "%DATA%\agent.yaml" goto plugins
copy /y "%~dp0agent.yaml.default" "%DATA%\agent.yaml" >nul
if errorlevel 1 exit /b 12
echo plugin-dir: %DATA%\plugins>>"%DATA%\agent.yaml"
if errorlevel 1 exit /b 12
:plugins
rem The plugins this package ships, installed by the agent into its plugin dir, which it
rem owns: each checked, trial-started and recorded in its catalog; one whose installed
rem version is the same or newer (the fleet may have upgraded it) is kept.
"%~dp0yuzu-agent.exe" --plugin-dir "%DATA%\plugins" --data-dir "%DATA%" --log-level warn plugins add --if-newer "%~dp0plugins\yuzu-plugin-filesystem.exe" "%~dp0plugins\yuzu-plugin-firewall.exe" "%~dp0plugins\yuzu-plugin-tags.exe"
if errorlevel 1 exit /b 15
:failure
rem Restart on failure after 5 s, 30 s, then every 60 s; the count starts again after
rem a day; a non-zero exit counts as a failure (as `yuzu-agent service install` sets).
sc.exe failure yuzu-agent reset= 86400 actions= restart/5000/restart/30000/restart/60000 >nul
if errorlevel 1 exit /b 13
sc.exe failureflag yuzu-agent 1 >nul
if not errorlevel 1 exit /b 0
rem Wine's sc.exe has no failureflag (and Wine's service manager keeps no failure
rem actions at all): there, and only there, its refusal is passed over.
reg query HKLM\Software\Wine >nul 2>&1
if errorlevel 1 exit /b 14
exit /b 0
