"""The two languages, the one a locale asks for, and every text the app's own chrome shows in both.
Lesson and engine texts carry their own."""

import os

LANGS = ("zh", "en")


def default_lang(environ=os.environ) -> str:
    """zh when the locale is Chinese (zh*), else en."""
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(var)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


TEXTS = {
    "next": ("next", "下一步"),
    "prev": ("back", "上一步"),
    "reset": ("reset", "复位"),
    "code": ("code", "代码"),
    "lang": ("中文", "English"),
    "lessons": ("lessons", "课程"),
    "help": ("help", "帮助"),
    "quit": ("quit", "退出"),
    "close": ("close", "关闭"),
    "open": ("open", "打开"),
    "step": ("step {i}/{n}", "第 {i}/{n} 步"),
    "lesson": ("lesson {i}/{n}", "第 {i}/{n} 课"),
    "train_key": ("train", "训练"),
    "train_stop": ("stop", "停止"),
    "training_start": ("Training big (d=64, 4 layers x 8 heads), in memory only: starting...",
                       "训练 big（d=64，4 层 x 8 个头），只在内存里：开始……"),
    "training_line": ("Training big (d=64, 4x8 heads): step {step}/{total}, loss {loss:.3f}, agreement {agr}",
                      "训练 big（d=64，4x8 个头）：第 {step}/{total} 步，损失 {loss:.3f}，一致率 {agr}"),
    "training_left": ("about {s:.0f} s left", "约剩 {s:.0f} 秒"),
    "chart_omitted": ("[chart: {title}; --plot draws it]", "[图表：{title}；加 --plot 可画出]"),
    "training_loss": ("loss", "损失"),
    "training_spread_name": ("head spread", "头熵之比"),
    "training_done": ("Finished in {s:.0f} s; the shipped weights are untouched. {key} closes this panel.",
                      "用时 {s:.0f} 秒训练完成；随附的权重没有被改动。按 {key} 关闭这一栏。"),
    "training_stopped": ("Stopped after {s:.0f} s; the shipped weights are untouched. {key} closes this panel.",
                         "{s:.0f} 秒后停止；随附的权重没有被改动。按 {key} 关闭这一栏。"),
    "computing_real": ("Computing: the real model reads the prompt (loading it takes a second the first time)...",
                       "正在计算：真实模型在读提示（第一次要花一秒左右加载模型）……"),
    "computing_bpe": ("Computing: learning the first {merges:,} merges from the lessons' text...",
                      "计算中：从课程文字里学习前 {merges:,} 次合并，请稍候……"),
    "try": ("Try {keys}.", "试试 {keys}。"),
    "try_more": (" Each press moves a setting on; what changed is underlined.",
                 "每按一次，设置换到下一个值；变了的地方加下划线。"),
    "no_experiments_here": ("No experiment changes this step: n goes on, c shows the code.",
                            "这一步没有可做的实验：按 n 继续，按 c 看代码。"),
    "not_here": ("[{key}] {param} is not part of this step; it changes the steps that show {param}.",
                 "[{key}] {param} 不属于这一步；它只改变显示 {param} 的那些步骤。"),
    "not_here_action": ("[{key}] works on the step that shows the trained heads pulling apart.",
                        "[{key}] 只在展示训练后各头分化的那一步起作用。"),
    "no_change": ("[{key}] the next value of {param} would show the same numbers here.",
                  "[{key}] {param} 换到下一个值，这里显示的数字也不会变。"),
    "no_key": ("Key {key} is not bound in this lesson.", "这一课没有绑定 {key} 键。"),
    "nothing_hidden": ("This step already shows every table and row of its view.", "这一步已经显示了全部表格和行。"),
    "no_code": ("This page has no engine code behind it.", "这一页背后没有引擎代码。"),
    "all_rows": ("all rows", "全表"),
    "all_rows_title": ("{view}: every table and row at these settings (Esc closes)",
                       "{view}：当前设置下的全部表格和行（Esc 关闭）"),
    "more_below": ("more below: Up/Down scrolls", "下面还有：用上下方向键滚动"),
    "resuming": ("Resuming at lesson {order}, {title}, step {step}.", "从第 {order} 课「{title}」第 {step} 步继续。"),
    "recap_done": ("Lesson complete: you have seen {seen} of its {n} steps.", "本课完成：{n} 步里你看过了 {seen} 步。"),
    "recap_remember": ("Worth remembering:", "值得记住的几点："),
    "recap_next": ("Next: lesson {order}, {title}. Press n.", "下一课：第 {order} 课「{title}」。按 n 继续。"),
    "recap_last": ("That was the last lesson. Press o to revisit any lesson.", "这是最后一课。按 o 可以回到任意一课。"),
    "recap_keys": ("This page sums up the lesson: p goes back, n goes on, o lists the lessons.",
                   "这一页是本课小结：p 返回，n 继续，o 列出所有课程。"),
    "reset_done": ("Settings reset to the lesson's defaults.", "设置已恢复为这一课的默认值。"),
    "reset_none": ("Nothing to reset: no experiment key was pressed in this lesson.",
                   "无需复位：这一课还没有按过实验键。"),
    "start": ("This is the first step of the tour.", "这已经是导览的第一步。"),
    "end": ("This is the last step of the tour. Press o for the lessons.",
            "这已经是导览的最后一步。按 o 查看所有课程。"),
    "refused": ("The engine refused: {message}", "引擎拒绝了：{message}"),
    "predict": ("Predict", "先预测"),
    "type_number": ("Type a number, then Enter (Esc skips): ", "输入一个数，按回车（Esc 跳过）："),
    "skip_hint": ("Esc skips", "Esc 跳过"),
    "right": ("Right", "答对了"),
    "wrong": ("Not quite", "不对"),
    "not_a_number": ("'{text}' is not a number: type one such as 1.5 or 2e9.",
                     "「{text}」不是数：请输入 1.5 或 2e9 这样的数。"),
    "you_typed": ("you typed", "你输入的是"),
    "edit_key": ("type", "输入"),
    "apply_key": ("apply", "应用"),
    "cancel_key": ("cancel", "取消"),
    "edit_hint": ("Type name=value, a setting the footer shows; Enter applies, Esc cancels.",
                  "输入 名称=值（底栏里的设置）；回车应用，Esc 取消。"),
    "edit_hint_sentence": ("Type your own sentence of the tiny grammar, or name=value; Enter applies.",
                           "输入你自己的一句（小语法里的词），或 名称=值；回车应用。"),
    "edit_hint_text": ("Type any text, up to 200 characters, or name=value; Enter applies, Esc cancels.",
                       "输入任意文本（最多 200 个字符），或 名称=值；回车应用，Esc 取消。"),
    "edit_text_side_en": ("Your text stands in for the English sentence; the Chinese one stays.",
                          "你的文本替换了英文那一句；中文那一句不变。"),
    "edit_text_side_zh": ("Your text stands in for the Chinese sentence; the English one stays.",
                          "你的文本替换了中文那一句；英文那一句不变。"),
    "edit_weights_form": ("Type weights=FILE.npz, a file that xf-tour train wrote.",
                          "请输入 weights=FILE.npz，即 xf-tour train 写出的文件。"),
    "edit_weights_open": ("Your weights, {name}, are run=yours on every trained-model step from now on.",
                          "你的权重 {name} 从现在起在每个训练好的小模型步骤里作为 run=yours 显示。"),
    "yours_idle": ("run=yours: the tables and figures are your weights', {name}; the prose was written for the "
                   "shipped run, so a claim it makes may not hold for yours.",
                   "run=yours：表格和数字来自你的权重 {name}；正文是按随附的训练写的，其中的说法未必适用于你的模型。"),
    "edit_control": ("Control characters are refused: type plain text.", "不接受控制字符：请输入普通文字。"),
    "edit_empty": ("Nothing typed: type name=value, or press Esc.", "什么也没输入：请输入 名称=值，或按 Esc。"),
    "edit_form": ("Type name=value, where name is one of: {names}.", "请输入 名称=值，名称是以下之一：{names}。"),
    "edit_unknown": ("This step has no setting '{name}': use one of {names}.",
                     "这一步没有「{name}」这个设置：请用 {names} 之一。"),
    "edit_unknown_word": ("'{word}' is not one of the tiny model's {n} tokens; try {near}.",
                          "「{word}」不在小模型的 {n} 个词元里；试试 {near}。"),
    "edit_odd": ("The grammar never makes this sentence: see what the model does with it.",
                 "小语法从不产生这样的句子：看看模型怎么对待它。"),
    "edit_too_big": ("Step {n} would not fit one {w}x{h} screen so: try a smaller value or a shorter text.",
                     "这样第 {n} 步在一屏（{w}x{h}）里放不下：换个小一些的值或短一些的文本。"),
    "edit_breaks": ("At that value step {n}'s prose needs a figure its table does not have: try another.",
                    "这个值下，第 {n} 步正文要用的数字表里没有：换一个值试试。"),
    "edit_taken_back": ("What you typed cannot be shown on this step: the lesson's own settings are back.",
                        "你输入的值在这一步无法显示：已恢复本课自己的设置。"),
    "edit_weights_shared": ("A shared session opens no files: weights are opened with xf-tour --weights FILE.npz.",
                            "共享的会话不能打开文件：请用 xf-tour --weights FILE.npz 打开权重。"),
    "no_edit": ("This page has no settings to type.", "这一页没有可输入的设置。"),
    "answer_key": ("answer", "作答"),
    "type_key": ("type, Enter", "输入，回车"),
    "skip_key": ("skip", "跳过"),
    "recap_score": ("Questions: {right} of {n} right{rest}.", "问题：{n} 道里答对 {right} 道{rest}。"),
    "recap_score_rest": (", {skipped} skipped or not yet asked", "，{skipped} 道跳过或还没问到"),
    "recap_missed": ("Missed: {ask} ({setting}) Answer: {answer}. {why}",
                     "答错的一道：{ask}（{setting}）答案：{answer}。{why}"),
    "keys_dropped": ("Keys came faster than the tour can follow: {n} were dropped.",
                     "按键来得比导览处理得快：丢掉了 {n} 个。"),
    "too_small": ("xf-tour needs a window of at least 80 x 24. This one is {w} x {h}: please make it larger.",
                  "xf-tour 需要至少 80 x 24 的窗口，现在是 {w} x {h}，请把窗口调大。"),
    # progress notices: one line of at most 78 cells each (tests/test_progress.py measures them)
    "progress_corrupt": ("Fresh start: damaged progress kept as {name}.",
                         "进度文件已损坏，另存为 {name}，导览从头开始。"),
    "progress_corrupt_kept": ("Damaged progress.json cannot be moved aside: fresh start, without saving.",
                              "损坏的 progress.json 无法移开：导览从头开始，不保存进度。"),
    "progress_unreadable": ("progress.json cannot be read: the tour starts fresh, without saving.",
                            "无法读取 progress.json：导览从头开始，不保存进度。"),
    "progress_special": ("progress.json is not a regular file: the tour starts fresh, without saving.",
                         "progress.json 不是普通文件：导览从头开始，不保存进度。"),
    "progress_save_full": ("Progress not saved: the disk is full. The tour runs on, retrying.",
                           "进度没有保存：磁盘已满。导览照常进行，并会重试。"),
    "progress_save_denied": ("Progress not saved: no permission to write. The tour runs on, retrying.",
                             "进度没有保存：没有写入权限。导览照常进行，并会重试。"),
    "progress_save_failed": ("Progress not saved: writing it failed. The tour runs on, retrying.",
                             "进度没有保存：写入失败。导览照常进行，并会重试。"),
    "crash": ("xf-tour: the tour stopped on an internal error: {error}. The full report is in {path}",
              "xf-tour：导览因内部错误而停止：{error}。完整报告在 {path}"),
    "crash_no_report": ("xf-tour: the tour stopped on an internal error: {error}. No report could be written; "
                        "rerun with XF_TOUR_DEBUG=1 to see the traceback.",
                        "xf-tour：导览因内部错误而停止：{error}。无法写出报告；"
                        "用 XF_TOUR_DEBUG=1 重新运行可以看到回溯。"),
    "beside": ("Beside it, with {settings}:", "右边是对照，设置为 {settings}："),
    "below": ("Below, with {settings}:", "下面是对照，设置为 {settings}："),
    "code_title": ("Code behind this table: {names}", "这张表背后的代码：{names}"),
    "code_folded": ("(argument checks folded: see the file)", "（参数检查已折叠，见源文件）"),
    "overview_title": ("Lessons: Enter opens one, r asks its questions again, Esc goes back",
                       "课程：回车打开，r 重新提问这一课的问题，Esc 返回"),
    "tour_line": ("Whole tour: {seen}/{steps} steps seen, {right}/{asked} questions right, about {left} min left.",
                  "整个导览：已看 {seen}/{steps} 步，答对 {right}/{asked} 题，大约还要 {left} 分钟。"),
    "col_lesson": ("lesson", "课程"),
    "col_steps": ("steps", "步数"),
    "col_right": ("right", "答对"),
    "col_minutes": ("min", "分钟"),
    "estimate_note": ("min estimated from {words} words/min, {look} s/step, {press} s/press, {ask} s/question.",
                      "分钟为估计：每分钟读 {chars} 字，每步 {look} 秒，每次按键 {press} 秒，每题 {ask} 秒。"),
    "end_title": ("The end of the tour: Enter opens a lesson again, Esc goes back",
                  "导览到此结束：回车重新打开一课，Esc 返回"),
    "end_revisit": ("Worth a second look (a question missed or unanswered, a step not seen): {lessons}.",
                    "值得再看一遍（有题答错或未答、有步未看）：第 {lessons} 课。"),
    "end_all_done": ("Every step seen and every question right. Well done.", "每一步都看过，每道题都答对了。做得好。"),
    "help_title": ("Keys", "按键"),
    "help_body": (
        "n or Right   next step (across lessons)\n"
        "p or Left    previous step\n"
        "1 to 9       run the lesson's experiments: each press moves to the next value, and what it changed is "
        "underlined\n"
        "a to d       answer the question a key asks before it acts; Esc skips it\n"
        "0            reset this lesson's settings, and ask its questions again\n"
        "t            every table and row, where a step shows only some\n"
        "c            show the engine code behind the current table\n"
        "l            switch between Chinese and English\n"
        "o            lessons and your progress\n"
        "w            the sizing workbench (params and kvcache lessons)\n"
        "Ctrl+P       jump to any lesson or step\n"
        "Up, Down     scroll, where a page is longer than the window\n"
        "e            type a setting (d=300), your own sentence or text, then Enter\n"
        "? and q      this help; quit (your place is saved)\n"
        "Esc          close a window such as this one",
        "n 或 右方向键    下一步（可跨课程）\n"
        "p 或 左方向键    上一步\n"
        "1 到 9           运行本课的实验：每按一次换到下一个值，变了的地方加下划线\n"
        "a 到 d           回答按键生效前提出的问题（Esc 跳过）\n"
        "0                把本课的实验设置复位，并重新提问本课的问题\n"
        "t                只显示部分内容的步骤：查看全部表格和行\n"
        "c                查看当前表格背后的引擎代码\n"
        "l                在中文和英文之间切换\n"
        "o                课程列表和学习进度\n"
        "w                参数与内存计算器（params、kvcache 两课）\n"
        "Ctrl+P           跳到任意一课或任意一步\n"
        "上、下方向键     页面比窗口长时滚动\n"
        "e                输入一个设置（d=300）、你自己的句子或文本，再按回车\n"
        "? 和 q           本帮助；退出（会记住当前位置）\n"
        "Esc              关闭本窗口这类弹出窗口"),
    "workbench_title": ("Sizing workbench: type a model card's numbers; the outputs follow each key",
                        "参数与内存计算器：填入模型卡上的数字，每敲一个键，结果随之更新"),
    "workbench_hint": ("Tab or Enter: next field. Presets: llama2-7b, llama3-8b, gemma-7b... d_ff follows "
                       "the SwiGLU rule when 'round to' is filled.",
                       "Tab 或回车：下一栏。预设如 llama2-7b、llama3-8b、gemma-7b……填了「取整倍数」，"
                       "前馈宽度就按 SwiGLU 规则算出。"),
    "workbench_invalid": ("Not valid yet:", "还不能计算："),
    "workbench_stale": ("Outputs are stale, from the last valid input:", "结果已过期，显示的是上一次有效输入的结果："),
    "workbench_next": ("next field", "下一栏"),
    "workbench_pin": ("pin to compare", "固定以对比"),
    "workbench_pin_label": ("pinned: {name}", "已固定：{name}"),
    "workbench_back": ("back to the lesson", "返回课程"),
    "workbench_total": ("total", "总计"),
    "workbench_published": ("published {n}: {ok}", "公布 {n}：{ok}"),
    "workbench_match": ("matches", "一致"),
    "workbench_differ": ("differs", "不同"),
    "workbench_memory": ("weights {w} {wb} + KV cache {c} {cb} ({ctx} tokens x {batch}) = {total}",
                         "权重 {w} {wb} + KV 缓存 {c} {cb}（{ctx} 词元 x {batch}）= {total}"),
    "workbench_fits": ("fits in {budget} GiB: yes, {gap} to spare", "放得进 {budget} GiB：可以，还剩 {gap}"),
    "workbench_short": ("fits in {budget} GiB: no, {gap} short", "放得进 {budget} GiB：不行，还差 {gap}"),
    "workbench_kv": ("KV cache per token: {per} in {c} = {formula} bytes",
                     "每词元 KV 缓存：{c} 下 {per} = {formula} 字节"),
    "workbench_finetune": ("full fine-tuning: {b} (Adam, mixed precision: {per} bytes a parameter, no activations)",
                           "全量微调：{b}（混合精度 Adam：每个参数 {per} 字节，不含激活值）"),
    "workbench_pinned": ("pinned: {name}, total {total}, weights + cache {mem}",
                         "已固定：{name}，总计 {total}，权重 + 缓存 {mem}"),
    "workbench_pinned_now": ("Pinned. Change a field: the table shows both, and the change.",
                             "已固定。改任意一栏：表格会同时列出两者和差值。"),
    "workbench_unpinned": ("Unpinned.", "已取消固定。"),
    "workbench_reset": ("Reset to the preset's values.", "已恢复为预设的数值。"),
    "workbench_quit_hint": ("The workbench was opened on its own: Ctrl+Q quits.",
                            "计算器是单独打开的：按 Ctrl+Q 退出。"),
    "workbench_custom": ("custom model (from {base})", "自定义模型（基于 {base}）"),
    "workbench_custom_plain": ("custom model", "自定义模型"),
    "workbench_items": ("Every parameter", "逐项参数"),
    "workbench_part": ("part", "部件"),
    "workbench_one_layer": ("one layer", "每层"),
    "workbench_all": ("all layers", "全部"),
    "workbench_layer": ("a whole layer", "一层合计"),
    "workbench_now": ("now", "当前"),
    "workbench_was": ("pinned", "已固定"),
    "workbench_change": ("change", "差值"),
    "workbench_chart": ("KV cache by context length (batch {batch}, {c})", "KV 缓存随上下文长度（批 {batch}，{c}）"),
    "workbench_context": ("context", "上下文"),
    "workbench": ("workbench", "计算器"),
    "no_workbench": ("The sizing workbench opens from the params and kvcache lessons, or with Ctrl+P.",
                     "参数与内存计算器可以在 params、kvcache 两课里打开，或按 Ctrl+P。"),
    "palette_workbench": ("Sizing workbench: parameters and memory of any model",
                          "参数与内存计算器：任意模型的参数量和内存"),
    "palette_overview": ("Lessons overview: your progress in each lesson", "课程总览：每一课的学习进度"),
    "workbench_source": ("source: {src}", "出处：{src}"),
    "palette_prompt": ("Jump to a lesson or step...", "跳到某一课或某一步……"),
    "palette_lesson": ("Lesson {order}: {title}", "第 {order} 课：{title}"),
    "palette_step": ("{lesson} > {title}", "{lesson} > {title}"),
    "own_problems": ("{n} problem(s) in your lessons; every one: xf-tour check-lessons {folder}",
                     "你的课程有 {n} 个问题；全部列出：xf-tour check-lessons {folder}"),
    "own_broken": ("This step cannot be shown: {error}. Check the lessons: xf-tour check-lessons {folder}",
                   "这一步无法显示：{error}。检查课程：xf-tour check-lessons {folder}"),
}


def t(name: str, lang: str, /, **fields) -> str:
    """The text called `name` in `lang`, with {fields} filled."""
    en, zh = TEXTS[name]
    return (zh if lang == "zh" else en).format(**fields)
