# shellcheck shell=sh
# /etc/mavenrc in harness's sandbox image: Maven's launcher (and a Maven wrapper's) sources it before
# Java starts, with the launcher's own arguments as "$@".
#
# Java reads no proxy variable, so the ones allowlist mode sets (https_proxy, http_proxy, no_proxy)
# become Java's proxy properties in MAVEN_OPTS. `--allow maven` on a host whose Maven uses mirrors
# puts a settings.xml naming them in HARNESS_MAVEN_SETTINGS; it becomes Maven's global settings, so
# the user's own ~/.m2/settings.xml still applies over it. Nothing set, nothing changes.

# "-DSCHEME.proxyHost=H -DSCHEME.proxyPort=P" for a proxy URL like http://127.0.0.1:3128/.
harness_proxy_properties() {
  harness_hostport=${2#*://}
  harness_hostport=${harness_hostport%%/*}
  harness_hostport=${harness_hostport##*@}
  harness_host=${harness_hostport%:*}
  harness_port=${harness_hostport##*:}
  if [ "$harness_host" = "$harness_hostport" ]; then harness_port=80; fi
  printf ' -D%s.proxyHost=%s -D%s.proxyPort=%s' "$1" "$harness_host" "$1" "$harness_port"
}

harness_https_proxy=${https_proxy:-${HTTPS_PROXY:-}}
harness_http_proxy=${http_proxy:-${HTTP_PROXY:-}}
harness_no_proxy=${no_proxy:-${NO_PROXY:-}}
if [ -n "$harness_https_proxy" ]; then
  MAVEN_OPTS="${MAVEN_OPTS:-}$(harness_proxy_properties https "$harness_https_proxy")"
fi
if [ -n "$harness_http_proxy" ]; then
  MAVEN_OPTS="${MAVEN_OPTS:-}$(harness_proxy_properties http "$harness_http_proxy")"
fi
if [ -n "$harness_no_proxy" ] && [ -n "$harness_https_proxy$harness_http_proxy" ]; then
  # no_proxy's "a,.b" is Java's "a|*.b"; an IPv6 literal is written as no_proxy writes it.
  harness_non_proxy=$(printf '%s' "$harness_no_proxy" | tr -d ' ' | sed -e 's/^\./*./' -e 's/,\./,*./g' -e 's/,/|/g')
  MAVEN_OPTS="$MAVEN_OPTS -Dhttp.nonProxyHosts=$harness_non_proxy"
fi
export MAVEN_OPTS

if [ -n "${HARNESS_MAVEN_SETTINGS:-}" ] && [ -n "${HOME:-}" ]; then
  harness_settings="$HOME/.m2/harness-settings.xml"
  if [ "$(cat "$harness_settings" 2>/dev/null)" != "$HARNESS_MAVEN_SETTINGS" ]; then
    mkdir -p "$HOME/.m2"
    printf '%s\n' "$HARNESS_MAVEN_SETTINGS" >"$harness_settings.$$"
    mv -f "$harness_settings.$$" "$harness_settings"
  fi
  set -- -gs "$harness_settings" "$@"
fi
unset harness_https_proxy harness_http_proxy harness_no_proxy harness_non_proxy harness_settings \
  harness_hostport harness_host harness_port
