"""What the demos share: the lesson contract (base), the registry the site calls, figures and
number formats, bilingual labels and the terminology table, prompts, the devices and model
shapes the calculators offer, and the cost helpers."""
