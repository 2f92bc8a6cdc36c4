#!/usr/bin/env python3
"""jinja2_check - our chat-template renderer against plain jinja2 configured as transformers
configures it (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, its
tojson/raise_exception/strftime_now and a {% generation %} tag that renders its body), on
(1) every family template in tests/data/chat_templates with conversations that have system
prompts, several turns, non-ASCII text, quotes and empty messages, with and without
add_generation_prompt, and (2) a corpus of small templates, one construct each.

    python3 tests/reference/jinja2_check.py [BUILD_DIR]     (default build; needs python3-jinja2)

Prints PASS/FAIL per template; exits 1 on any failure, 77 (skip) without jinja2."""
import json
import sys
from datetime import datetime

try:
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("SKIP: python3-jinja2 is not installed")
    sys.exit(77)

import chat_cases


class Generation(Extension):
    """{% generation %}...{% endgeneration %}: renders its body (transformers tracks the span
    for assistant masks, which does not change the text)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


ENV = make_env()


def reference(template, case):
    kwargs = {k: v for k, v in case.items() if k in ("bos_token", "eos_token")}
    try:
        text = ENV.from_string(template).render(messages=case["messages"], tools=None, documents=None,
                                                add_generation_prompt=case.get("add_generation_prompt", False), **kwargs)
        return ("ok", text)
    except Exception as e:  # any jinja2 or Python error: ours must refuse too
        return ("error", f"{type(e).__name__}: {e}")


# One construct each; rendered over two small conversations. Expected outputs are jinja2's.
CONSTRUCTS = [
    "{{ 'a' ~ 1 ~ none ~ true ~ 1.5 }}", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ 1e20 }} {{ 0.1 + 0.2 }}",
    "{{ [1, 'a', none, [2.0, (3,)], {'k': 'v'}] }}", "{{ (1,) }} {{ () }} {{ ('a', \"b'c\") }}", "{{ 'x' * 3 }}{{ [0] * 2 }}",
    "{{ messages | length }} {{ messages[0].role }} {{ messages[-1]['content'] }} {{ messages[5] is defined }}",
    "{% for m in messages %}{{ loop.index }}/{{ loop.length }} {{ loop.first }} {{ loop.last }} {{ loop.revindex }}"
    "{% if loop.previtem is defined %}<{{ loop.previtem.role }}{% endif %}{% if loop.nextitem is defined %}>{{ loop.nextitem.role }}{% endif %};{% endfor %}",
    "{% for m in messages if m.role != 'system' %}{{ loop.index0 }}{{ m.role }}{% else %}empty{% endfor %}",
    "{% for m in [] %}x{% else %}none{% endfor %}", "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }},{% endfor %}",
    "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 5 %}{% break %}{% endif %}{{ x }}{% endfor %}",
    "{% set ns = namespace(n=0, s='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% set ns.s = ns.s + m.role[0] %}{% endfor %}{{ ns.n }}{{ ns.s }}",
    "{% set x = 1 %}{% for i in range(3) %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}",
    "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }} {{ greet(punct='.', name='c') }}",
    "{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(5) }}",
    "{% set block %}inner {{ 1 + 1 }}{% endset %}[{{ block }}]", "{% filter upper %}shout {{ 'it' }}{% endfilter %}",
    "{{ '  a b  ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ ' a '.strip() }}|{{ 'xay'.lstrip('x') }}|{{ 'xay'.rstrip('y') }}",
    "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }}",
    "{{ 'Hello'.startswith('He') }} {{ 'Hello'.endswith(('x', 'lo')) }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }}",
    "{{ 'abc' | upper }} {{ 'ABC' | lower }} {{ 'hello-world foo' | title }} {{ 'abc' | capitalize }} {{ 'aaa'.replace('a', 'b', 2) }}",
    "{{ 'abcdef'[1:4] }} {{ 'abcdef'[::-1] }} {{ 'abcdef'[-2:] }} {{ [1,2,3,4][::2] }} {{ 'héllo'[1] }} {{ 'héllo' | length }}",
    "{{ undefined_var }}|{{ undefined_var is defined }}|{{ undefined_var | default('d') }}|{{ '' | default('e', true) }}|{{ none is none }}",
    "{{ 1 is number }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is iterable }} {{ 3 is odd }} {{ 4 is even }} {{ 1 is integer }} {{ 1.0 is float }} {{ true is boolean }}",
    "{{ 'a' in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'cat' }} {{ 1 == 1.0 }} {{ [1] == [1] }} {{ 'a' < 'b' }}",
    "{{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ messages | rejectattr('role', 'eq', 'user') | map(attribute='role') | join('|') }}",
    "{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ [1, 2, 2, 1] | unique | list }} {{ [1, 5, 3] | max }} {{ [1, 5, 3] | min }} {{ [1, 2] | sum }}",
    "{{ [1, 2, 3] | first }} {{ [1, 2, 3] | last }} {{ 'abc' | first }} {{ [1, 2] | reverse | list }} {{ 'abc' | reverse }} {{ 'ab' | list }}",
    "{{ {'a': 1, 'b': [1, 2.5, none, true], 'c': 'é\"\\n'} | tojson }}", "{{ {'b': 1, 'a': {'x': []}} | tojson(indent=2) }}",
    "{{ [1, {'a': 'b'}] | tojson(separators=(',', ':')) }} {{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }} {{ 'é' | tojson(ensure_ascii=true) }}",
    "{{ 'line1\nline2\n\nline3' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}|{{ 'a\n\nb' | indent(width='> ', blank=true) }}",
    "{{ '42' | int }} {{ 'x' | int }} {{ '3.7' | int }} {{ 3.7 | int }} {{ '2.5' | float }} {{ 'x' | float(1.5) }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ -3 | abs }}",
    "{{ {'a': 1}.get('a') }} {{ {'a': 1}.get('b', 'no') }} {{ {'a': 1}.keys() | list }} {{ {'a': 1}.values() | list }} {{ {'a': 1} | items | list }}",
    "{{ 'yes' if messages else 'no' }} {{ 'x' if false }}|{{ 0 or 'b' }} {{ 1 and 'c' }} {{ not [] }}",
    "{%- if true -%}   a   {%- endif -%}   b {{- ' c ' -}} d",
    "  {% if true %}\n    x\n  {% endif %}\ny {# comment #}\n  {# indented comment #}\nz",
    "{% if true %}a{% endif %}\n{% if false %}b{% endif %}\nc\n", "{%+ if true %}  keep{% endif +%}\nnext",
    "{% raw %}{{ x }}{% endraw %}", "{{ messages[0]['content'] | trim }}{{ eos_token }}", "{{ foo.bar }}",
    "{{ raise_exception('stop here') }}", "{{ 1 + 'a' }}", "{{ 'abc' | wordcount }}", "{% for x in 5 %}{% endfor %}",
    "{{ \"a\" \"b\" 'c' }} {{ '\\x41\\u00e9\\t|' }} {{ 'it\\'s' }}", "{% set a, b = [1, 2] %}{{ b }}{{ a }}",
    "{% generation %}gen {{ 1 }}{% endgeneration %}", "{{ dict(a=1, b='x') }} {{ namespace(a=1).a }}",
    "{{ strftime_now('%Y') | length }}", "{{ 1 if 2 is divisibleby 2 else 0 }} {{ 'a' is lower }} {{ 'A' is upper }} {{ 'x' is sameas 'x' }}",
    "{{ [1, 2, 3] | select('odd') | list }} {{ [1, 2, 3] | reject('odd') | list }} {{ ['a', 'b'] | map('upper') | join }}",
    "{{ 10000000000000000.0 }} {{ 1e-5 }} {{ 0.0001 }} {{ -0.0 }} {{ 1/3 }} {{ 2.0 * 3 }} {{ 123456789.123 }}",
    "{{ messages[0].content.split('l') }} {{ 'a-b' ~ 'c' | upper }} {{ -2 ** 2 }} {{ (1, 2) + (3,) }} {{ [1] + [2] }}",
    "{% for m in messages %}{% for c in m.role %}{{ loop.index }}{{ c }}{% endfor %}|{{ loop.index }}{% endfor %}",
    "{{ 'a\\nb' | replace('\\n', ' ') }} {{ 'aXbXc' | replace('X', '-', 1) }} {{ 'ab' | safe }} {{ '<a>' | e }}",
]


def main():
    cli = chat_cases.find_cli(sys.argv)
    failures = 0
    for path in chat_cases.family_templates():
        name = path.rsplit("/", 1)[-1][:-len(".jinja")]
        with open(path, encoding="utf-8") as f:
            template = f.read()
        failures += chat_cases.compare(name, template, chat_cases.family_cases(name, 7), reference, cli, require_supported=True)
    convs = chat_cases.conversations(3)[:6]
    for k, template in enumerate(CONSTRUCTS):
        cases = [{"messages": c, "add_generation_prompt": bool(i % 2), "bos_token": "<s>", "eos_token": "</s>"} for i, c in enumerate(convs)]
        failures += chat_cases.compare(f"construct {k}: {template[:60]!r}", template, cases, reference, cli, require_supported=False)
    print("ALL PASS" if failures == 0 else f"{failures} FAILURES")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
