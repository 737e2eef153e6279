"""Multi30k DE->EN: the main job's recipe (config/presets/multi30k.py) in the other direction, nothing else changed.

Data: $T2T_DATA_DIR/multi30k/{train,val,test_2016_flickr}.{de,en}; the shared BPE is learned on both sides,
so only which side is the source changes.
"""

from t2t_jax.config.presets import multi30k


def get_config():
    c = multi30k.get_config()
    c.data.source_lang, c.data.target_lang = "de", "en"
    return c
