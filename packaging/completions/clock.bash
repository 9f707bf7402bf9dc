# bash completion for clock(1)                             -*- shell-script -*-
# Installed as /usr/share/bash-completion/completions/clock (loaded on demand
# by the bash-completion package). Try it from the source tree with:
#   source packaging/completions/clock.bash
# Completes commands, their flags, the values of --format, --log-format,
# --event, --on-lease-lost and --leftovers, the command after `clock run ... --`, and resource names
# (-r, and the PREFIX of status and history) from `clock status --format json`
# of the database the command line names.
#
# COMPREPLY=($(compgen ...)) is bash-completion's own idiom (the words never
# hold blanks), and compgen -W expands the '$(_clock_resources)' it is given.
# shellcheck shell=bash disable=SC2207,SC2016

# The database the command line would use: --database, else
# $CLOCK_DATABASE_URL, else the config file's top-level `database`, else the
# default SQLite file. An approximation of clock's own rules, good enough to
# tell whether a status query could create a new SQLite file.
_clock_database()
{
    local i db='' config=''
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --database) db=${words[i + 1]} ;;
            --database=*) db=${words[i]#*=} ;;
            --config) config=${words[i + 1]} ;;
            --config=*) config=${words[i]#*=} ;;
        esac
    done
    [[ -n $db ]] || db=${CLOCK_DATABASE_URL-}
    if [[ -z $db ]]; then
        [[ -n $config ]] || config=${CLOCK_CONFIG-}
        if [[ -z $config ]]; then
            for config in "${XDG_CONFIG_HOME:-$HOME/.config}/clock/clock.toml" /etc/clock/clock.toml ''; do
                [[ -z $config || -f $config ]] && break
            done
        fi
        config=${config/#\~\//$HOME/}
        if [[ -n $config && -r $config ]]; then
            db=$(sed -n -e '/^[[:space:]]*\[/q' \
                -e "s/^[[:space:]]*database[[:space:]]*=[[:space:]]*[\"']\([^\"']*\)[\"'].*/\1/p" \
                "$config" 2>/dev/null)
        fi
    fi
    printf '%s\n' "${db:-sqlite:${XDG_STATE_HOME:-$HOME/.local/state}/clock/clock.db}"
}

# The resources that have holders or waiters now, one a line, from
# `clock status --format json` with the --config, --database and --namespace
# of the command line, given 2 seconds. Nothing when the database is an SQLite
# file that does not exist: clock would create it, and Tab must not.
_clock_resources()
{
    local db
    db=$(_clock_database)
    if [[ $db == sqlite:* ]]; then
        db=${db#sqlite:}
        db=${db#//}
        db=${db/#\~\//$HOME/}
        [[ -f $db ]] || return 0
    fi
    local -a args=()
    local i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --config | --database | --namespace)
                args+=("${words[i]}" "${words[i + 1]}")
                ((i++))
                ;;
            --config=* | --database=* | --namespace=*) args+=("${words[i]}") ;;
        esac
    done
    timeout 2 "${words[0]}" "${args[@]}" -q status --format json 2>/dev/null |
        sed -n 's/.*"resource": *"\([^"]*\)".*/\1/p' | sort -u
}

_clock()
{
    local cur prev words cword split
    _init_completion -s || return

    local commands='acquire release renew status history run gc init serve config check missed'
    # Global options; accepted after the command name too.
    local global_opts='--config --database --namespace -v --verbose -q --quiet --log-format'

    # The command: the first word that is neither an option nor an option's value.
    local i cmd='' cmd_at=0
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --config | --database | --namespace | --log-format) ((i++)) ;;
            -*) ;;
            *)
                cmd=${words[i]} cmd_at=$i
                break
                ;;
        esac
    done

    # clock run ... -- CMD ARGS: complete CMD and its arguments as a command line.
    if [[ $cmd == run ]]; then
        for ((i = cmd_at + 1; i < cword; i++)); do
            if [[ ${words[i]} == -- ]]; then
                _command_offset $((i + 1))
                return
            fi
        done
    fi

    # The value of an option.
    case $prev in
        --config)
            _filedir
            return
            ;;
        --log-format)
            COMPREPLY=($(compgen -W 'text json' -- "$cur"))
            return
            ;;
        --database)
            COMPREPLY=($(compgen -W 'sqlite: postgresql://' -- "$cur"))
            [[ ${COMPREPLY-} == *: ]] && compopt -o nospace
            return
            ;;
        --namespace | --owner | --ttl | --slots | -w | --wait | -E | --conflict-exit-code | \
            --heartbeat | --kill-after | --jitter | --max-runtime | --once-per | --every | --limit | --history-older-than | \
            --listen | --refresh | --timeline-events | --since | --ping)
            return
            ;;
        -r | --resource)
            COMPREPLY=($(compgen -W '$(_clock_resources)' -- "$cur"))
            return
            ;;
        --format)
            case $cmd in
                acquire) COMPREPLY=($(compgen -W 'text json shell' -- "$cur")) ;;
                status) COMPREPLY=($(compgen -W 'table json prometheus' -- "$cur")) ;;
                history | config) COMPREPLY=($(compgen -W 'table json' -- "$cur")) ;;
                missed) COMPREPLY=($(compgen -W 'table json nagios' -- "$cur")) ;;
            esac
            return
            ;;
        --event)
            COMPREPLY=($(compgen -W 'acquired released expired forced lost skipped timed_out killed refused period_changed' -- "$cur"))
            return
            ;;
        --on-lease-lost)
            COMPREPLY=($(compgen -W 'kill warn' -- "$cur"))
            return
            ;;
        --leftovers)
            COMPREPLY=($(compgen -W 'kill wait' -- "$cur"))
            return
            ;;
    esac
    $split && return

    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$global_opts --version -h --help" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        fi
        return
    fi

    local lock_opts='-r --resource --owner --ttl -s --shared -x --exclusive --slots
        -n --nonblock -w --wait -E --conflict-exit-code'
    local opts=''
    case $cmd in
        acquire) opts="$lock_opts --format" ;;
        release) opts='-r --resource --owner --force' ;;
        renew) opts='-r --resource --owner --ttl' ;;
        status) opts='--format --all' ;;
        history) opts='--limit --event --format' ;;
        run) opts="$lock_opts --heartbeat --on-lease-lost --leftovers --kill-after --jitter --max-runtime --once-per --every --ping --watch-lease --" ;;
        gc) opts='--dry-run --history-older-than' ;;
        init) opts='--print-sql' ;;
        serve) opts='--listen --refresh --auth-file --timeline-events' ;;
        config) opts='--format' ;;
        check) opts='' ;;
        missed) opts='--since --format' ;;
        *) return ;;
    esac

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts $global_opts -h --help" -- "$cur"))
        [[ ${COMPREPLY-} == *= ]] && compopt -o nospace
    elif [[ $cmd == status || $cmd == history ]]; then
        # The optional PREFIX: a resource.
        COMPREPLY=($(compgen -W '$(_clock_resources)' -- "$cur"))
    fi
} &&
    complete -F _clock clock

# ex: filetype=sh
