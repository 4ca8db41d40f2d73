"""A chat-format plugin: plain ChatML with tools listed in the system turn and Hermes-style calls."""

from t3rl_core.chat.custom import ChatTemplate
from t3rl_core.chat.families import Family

TEMPLATE = """\
{%- if tools or messages[0].role == 'system' %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}{% endif %}
{%- if tools %}

Tools (call one as <tool_call>{"name": ..., "arguments": ...}</tool_call>):
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}{% endif %}<|im_end|>
{% endif %}
{%- for message in messages if message.role != 'system' %}
<|im_start|>{{ message.role }}
{{ message.content or '' }}
{%- for call in message.tool_calls or [] %}<tool_call>
{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}
</tool_call>{% endfor %}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

CHATML = ChatTemplate(
    family=Family(
        name="chatml",
        special_tokens=("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
        tag_tokens=("<tool_call>", "</tool_call>"),
        stop_tokens=("<|im_end|>", "<|endoftext|>"),
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        tool_call_parser="qwen25",
        reasoning_parser=None,
    ),
    template=TEMPLATE,
)
