"""The numbers the pages quote (the facts hook's [[fact:key]] placeholders), computed from the
engine: table.facts(lang)."""
