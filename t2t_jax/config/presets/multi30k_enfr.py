"""Multi30k EN->FR: the main job's recipe (config/presets/multi30k.py) on the French side of Multi30k.

Data: $T2T_DATA_DIR/multi30k/{train,val,test_2016_flickr}.{en,fr}; its own shared 8k BPE of EN+FR.
"""

from t2t_jax.config.presets import multi30k


def get_config():
    c = multi30k.get_config()
    c.data.source_lang, c.data.target_lang = "en", "fr"
    return c
