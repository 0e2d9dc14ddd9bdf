<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>hetplan::gui::ComparisonModel</name>
    <message>
        <location filename="../comparison.cpp" line="21"/>
        <source>%1: %2 nodes</source>
        <translation>%1：%2 个节点</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="57"/>
        <source>tokens/s</source>
        <translation>tokens/s</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="59"/>
        <source>chips</source>
        <translation>芯片数</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="60"/>
        <source>tokens/s per chip</source>
        <translation>每芯片 tokens/s</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="66"/>
        <source>cost per million tokens</source>
        <translation>每百万 tokens 成本</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="68"/>
        <source>software stacks</source>
        <translation>软件栈数</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="70"/>
        <source>step time, s</source>
        <translation>单步时间，秒</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="72"/>
        <source>MFU, %</source>
        <translation>MFU，%</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="74"/>
        <source>pipeline stages</source>
        <translation>流水线阶段数</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="79"/>
        <source>micro-batches</source>
        <translation>微批次数</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="82"/>
        <source>compute (bottleneck stage), s</source>
        <translation>计算（瓶颈阶段），秒</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="84"/>
        <source>bubble, s</source>
        <translation>流水线气泡，秒</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="86"/>
        <source>tensor-parallel communication, s</source>
        <translation>张量并行通信，秒</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="89"/>
        <source>pipeline sends, s</source>
        <translation>流水线发送，秒</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="92"/>
        <source>cross-island sends, s</source>
        <translation>跨计算岛发送，秒</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="95"/>
        <source>data-parallel sync (exposed), s</source>
        <translation>数据并行同步（未掩盖），秒</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="98"/>
        <source>expert-parallel all-to-all, s</source>
        <translation>专家并行 all-to-all，秒</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="101"/>
        <source>optimizer, s</source>
        <translation>优化器，秒</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="103"/>
        <source>peak memory per chip, GiB</source>
        <translation>每芯片显存峰值，GiB</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="141"/>
        <source>Figure</source>
        <translation>指标</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="142"/>
        <source>Pinned</source>
        <translation>已固定</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="143"/>
        <source>Selected</source>
        <translation>当前选中</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="144"/>
        <source>Change</source>
        <translation>变化</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="155"/>
        <source>plan</source>
        <translation>方案</translation>
    </message>
    <message>
        <location filename="../comparison.cpp" line="155"/>
        <source>planned on</source>
        <translation>规划依据</translation>
    </message>
</context>
<context>
    <name>hetplan::gui::ExportDialog</name>
    <message>
        <location filename="../export_dialog.cpp" line="33"/>
        <source>Export plan %1</source>
        <translation>导出方案 %1</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="48"/>
        <source>&lt;p&gt;&lt;b&gt;Validated:&lt;/b&gt; every island and boundary of the plan has passed the validation ladder.&lt;/p&gt;</source>
        <translation>&lt;p&gt;&lt;b&gt;已验证：&lt;/b&gt;方案中每个计算岛和边界都已通过验证阶梯。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="51"/>
        <source>&lt;p&gt;&lt;b&gt;Not validated.&lt;/b&gt; The ladder lacks, for this plan:&lt;/p&gt;&lt;ul&gt;</source>
        <translation>&lt;p&gt;&lt;b&gt;未验证。&lt;/b&gt;对本方案，验证阶梯还缺少：&lt;/p&gt;&lt;ul&gt;</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="59"/>
        <source>&lt;p&gt;The validation ladder of cluster %1:&lt;/p&gt;</source>
        <translation>&lt;p&gt;集群 %1 的验证阶梯：&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="60"/>
        <source>&lt;p&gt;The validation ladder of cluster %1, with no records yet:&lt;/p&gt;</source>
        <translation>&lt;p&gt;集群 %1 的验证阶梯（尚无验证记录）：&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="69"/>
        <source>Volcano Job</source>
        <translation>Volcano 作业</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="70"/>
        <source>Plan JSON (scheduler extender)</source>
        <translation>方案 JSON（调度器扩展）</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="71"/>
        <source>Megatron-LM / MindSpeed-LLM arguments</source>
        <translation>Megatron-LM / MindSpeed-LLM 启动参数</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="72"/>
        <source>Node labels (kubectl label)</source>
        <translation>节点标签（kubectl label）</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="73"/>
        <source>Export as</source>
        <translation>导出为</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="76"/>
        <source>Browse...</source>
        <translation>浏览...</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="79"/>
        <source>Into folder</source>
        <translation>目标文件夹</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="81"/>
        <source>each island&apos;s image from the cluster file, else %1</source>
        <translation>各计算岛使用集群文件中的镜像，否则为 %1</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="83"/>
        <source>Container image</source>
        <translation>容器镜像</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="84"/>
        <source>Export although the plan is not validated (every file says so, as --allow-unvalidated does)</source>
        <translation>方案未验证也导出（每个文件都会注明，与 --allow-unvalidated 相同）</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="97"/>
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="98"/>
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="103"/>
        <source>Export into</source>
        <translation>导出到</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="119"/>
        <source>error: choose a folder to export into</source>
        <translation>error: 请选择导出的文件夹</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="150"/>
        <source>wrote %1</source>
        <translation>已写入 %1</translation>
    </message>
    <message>
        <location filename="../export_dialog.cpp" line="152"/>
        <source>
note: exported unvalidated, as asked; every file says so</source>
        <translation>
注意：按要求导出了未验证的方案；每个文件都已注明</translation>
    </message>
</context>
<context>
    <name>hetplan::gui::IslandsModel</name>
    <message>
        <location filename="../models.cpp" line="30"/>
        <source>Island</source>
        <translation>计算岛</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="31"/>
        <source>Chip</source>
        <translation>芯片</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="32"/>
        <source>Nodes</source>
        <translation>节点数</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="33"/>
        <source>Free nodes</source>
        <translation>空闲节点</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="34"/>
        <source>Chips per node</source>
        <translation>每节点芯片数</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="35"/>
        <source>NICs</source>
        <translation>网卡</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="36"/>
        <source>Zone</source>
        <translation>网络分区</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="94"/>
        <source>: expected an integer from 1 to 100000, got &quot;%1&quot;</source>
        <translation>：应为 1 到 100000 之间的整数，实际为 &quot;%1&quot;</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="103"/>
        <source>: expected at most the island&apos;s %1 nodes, got &quot;%2&quot;</source>
        <translation>：不能超过该计算岛的 %1 个节点，实际为 &quot;%2&quot;</translation>
    </message>
</context>
<context>
    <name>hetplan::gui::MainWindow</name>
    <message>
        <location filename="../main_window.cpp" line="1193"/>
        <source>&lt;p&gt;expert-parallel all-to-all %1 s (exposed)&lt;/p&gt;</source>
        <translation>&lt;p&gt;专家并行 all-to-all %1 秒（未掩盖）&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="136"/>
        <source>hetplan</source>
        <translation>hetplan</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="139"/>
        <source>Plan</source>
        <translation>方案</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="140"/>
        <source>Open scenario...</source>
        <translation>打开场景...</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="144"/>
        <source>Search plans</source>
        <translation>搜索方案</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="151"/>
        <source>all</source>
        <translation>全部</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="155"/>
        <source>The most islands one task-level pipeline may span (all: no cap). A cap bounds the search&apos;s time on sites of many islands.</source>
        <translation>一条任务级流水线最多可跨越的计算岛数（全部：不设上限）。在计算岛很多的站点上，上限可约束搜索时间。</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="162"/>
        <source>Simulate plan</source>
        <translation>仿真方案</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="163"/>
        <source>Simulate one step of the plan in the detail tab on the cluster&apos;s fabric</source>
        <translation>在集群网络上仿真详情页中方案的一个训练步</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="164"/>
        <source>Pin for comparison</source>
        <translation>固定以便比较</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="165"/>
        <source>Keep the plan in the detail tab to compare it with others, also after editing the islands</source>
        <translation>保留详情页中的方案，用于和其他方案比较（修改计算岛后仍保留）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="166"/>
        <source>Export plan...</source>
        <translation>导出方案...</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="167"/>
        <source>Write the plan in the detail tab for the scheduler: Volcano Job, plan JSON, launch arguments, labels</source>
        <translation>为调度器写出详情页中的方案：Volcano 作业、方案 JSON、启动参数、节点标签</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="168"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="170"/>
        <source>Open a scenario</source>
        <translation>打开场景</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="171"/>
        <source>Scenarios (*.yaml *.yml)</source>
        <translation>场景文件 (*.yaml *.yml)</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="208"/>
        <source>Filter plans: any text of a row (an island, &quot;task-level&quot;, &quot;tp8&quot;, ...)</source>
        <translation>筛选方案：行中的任意文字（计算岛、&quot;task-level&quot;、&quot;tp8&quot; 等）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="241"/>
        <source>Three states and why</source>
        <translation>三种形态与原因</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="250"/>
        <source>Stages in pipeline order, coloured by vendor. &lt;b&gt;Thick arrow&lt;/b&gt;: a cross-island boundary (activations cross vendors over the fabric); dashed border: the stage does not fit in memory.</source>
        <translation>按流水线顺序排列的阶段，颜色表示厂商。&lt;b&gt;粗箭头&lt;/b&gt;：跨计算岛边界（激活值经网络跨厂商传输）；虚线边框：该阶段显存放不下。</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="265"/>
        <source>Plan detail</source>
        <translation>方案详情</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="273"/>
        <source>Zoom in</source>
        <translation>放大</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="274"/>
        <source>Zoom out</source>
        <translation>缩小</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="275"/>
        <source>Whole step</source>
        <translation>整个训练步</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="276"/>
        <source>Save trace for Perfetto...</source>
        <translation>保存 Perfetto 跟踪文件...</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="279"/>
        <source>Every replica</source>
        <translation>所有副本</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="280"/>
        <source>Show every data-parallel replica of each stage, not only the first</source>
        <translation>显示每个阶段的所有数据并行副本，而不只是第一个</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="286"/>
        <source>forward</source>
        <translation>前向</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="286"/>
        <source>backward</source>
        <translation>反向</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="287"/>
        <source>pipeline send</source>
        <translation>流水线发送</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="287"/>
        <source>waiting</source>
        <translation>等待</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="288"/>
        <source>gradient sync</source>
        <translation>梯度同步</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="290"/>
        <location filename="../main_window.cpp" line="1275"/>
        <source>optimizer</source>
        <comment>the optimizer step</comment>
        <translation>优化器</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="306"/>
        <source>Simulated step</source>
        <translation>仿真训练步</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="311"/>
        <source>Pin a plan (Pin for comparison), then pick another plan, or edit the islands and search again: the two are compared here, the changes better in green and worse in red.</source>
        <translation>先固定一个方案（固定以便比较），再选择另一个方案，或修改计算岛后重新搜索：两者在此对比，变好的用绿色，变差的用红色。</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="321"/>
        <source>Compare</source>
        <translation>比较</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="327"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="330"/>
        <source>Structure</source>
        <translation>结构</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="331"/>
        <source>Choose config.json...</source>
        <translation>选择 config.json...</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="338"/>
        <source>A Hugging Face config.json</source>
        <translation>Hugging Face 的 config.json</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="339"/>
        <source>Model configs (*.json)</source>
        <translation>模型配置 (*.json)</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="376"/>
        <source>Layers</source>
        <translation>层数</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="377"/>
        <source>Hidden size</source>
        <translation>隐藏维度</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="378"/>
        <source>Attention heads</source>
        <translation>注意力头数</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="379"/>
        <source>Key/value heads</source>
        <translation>键/值头数</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="380"/>
        <source>FFN size</source>
        <translation>FFN 维度</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="381"/>
        <source>Vocabulary</source>
        <translation>词表大小</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="382"/>
        <source>Sequence length</source>
        <translation>序列长度</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="383"/>
        <source>Global batch (sequences)</source>
        <translation>全局批大小（序列）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="384"/>
        <source>Micro-batch (sequences)</source>
        <translation>微批大小（序列）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="385"/>
        <source>Data type</source>
        <translation>数据类型</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="387"/>
        <source>Recompute</source>
        <translation>重计算</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="389"/>
        <source>ZeRO stage</source>
        <translation>ZeRO 阶段</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="401"/>
        <source>Sequence parallelism</source>
        <translation>序列并行</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="402"/>
        <source>Fused (flash) attention</source>
        <translation>融合（Flash）注意力</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="403"/>
        <source>Overlap the gradient reduce-scatter with backward</source>
        <translation>梯度 reduce-scatter 与反向计算重叠</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="404"/>
        <source>Overlap the weight all-gather with the next forward</source>
        <translation>权重 all-gather 与下一次前向计算重叠</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="405"/>
        <source>Overlap tensor-parallel communication (MC2 on Ascend)</source>
        <translation>张量并行通信与计算重叠（昇腾 MC2）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="407"/>
        <source>Overlap expert-parallel all-to-alls with the other micro-batch</source>
        <translation>专家并行 all-to-all 与另一微批次的计算重叠</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="430"/>
        <source>RMSNorm unfused (PyTorch&apos;s reference operators)</source>
        <translation>RMSNorm 未融合（PyTorch 参考实现的逐个算子）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="431"/>
        <source>SwiGLU unfused (silu and a product)</source>
        <translation>SwiGLU 未融合（silu 与乘法两个算子）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="432"/>
        <source>Rotary embedding unfused (rotate_half, products and a sum)</source>
        <translation>旋转位置编码未融合（rotate_half、乘法与加法）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="434"/>
        <source>Busiest expert&apos;s load over the mean</source>
        <translation>最忙专家的负载与平均负载之比</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="438"/>
        <source>Token dispatcher</source>
        <translation>Token 分发器</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="440"/>
        <source>Grouped GEMM for a chip&apos;s experts</source>
        <translation>同一芯片上的专家使用分组 GEMM</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="441"/>
        <source>Workload</source>
        <translation>训练负载</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="450"/>
        <source>Save the Chrome trace</source>
        <translation>保存 Chrome 跟踪文件</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="451"/>
        <source>Chrome traces (*.json)</source>
        <translation>Chrome 跟踪文件 (*.json)</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="475"/>
        <source>islands changed: search again for plans on the changed cluster</source>
        <translation>计算岛已修改：请在修改后的集群上重新搜索方案</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="482"/>
        <source>searching: %1 of %2 settings, %3 plans scored, %4 pruned (%5)</source>
        <translation>搜索中：已尝试 %1 / %2 组设置，评估 %3 个方案，剪枝 %4 个（%5）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="500"/>
        <source>simulation cancelled</source>
        <translation>仿真已取消</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="559"/>
        <source>%1: written inline in %2</source>
        <translation>%1：直接写在 %2 中</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="560"/>
        <source>%1: from the Hugging Face config %2 (edit that file to change the model)</source>
        <translation>%1：来自 Hugging Face 配置 %2（修改模型请编辑该文件）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="576"/>
        <source>%1 B parameters, %2 B active per token</source>
        <translation>%1 B 参数，每个 token 激活 %2 B</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="579"/>
        <source>%1 B parameters</source>
        <translation>%1 B 参数</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="581"/>
        <source>mixture of experts: %1 routed experts of FFN %2, %3 per token</source>
        <translation>混合专家：%1 个路由专家（FFN %2），每个 token 选 %3 个</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="586"/>
        <source>, %1 shared of FFN %2</source>
        <translation>，%1 个共享专家（FFN %2）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="592"/>
        <source>latent attention: K/V rank %1, Q rank %2, rotary dimensions %3</source>
        <translation>多头潜在注意力（MLA）：K/V 秩 %1，Q 秩 %2，旋转位置维度 %3</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="594"/>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="601"/>
        <source>The workload writes its model inline</source>
        <translation>该训练负载直接写出了模型结构</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="640"/>
        <source>The model&apos;s norm is LayerNorm, one native kernel either way</source>
        <translation>模型的归一化是 LayerNorm，无论如何都是一个原生内核</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="641"/>
        <source>The model&apos;s MLP is not SwiGLU</source>
        <translation>模型的 MLP 不是 SwiGLU</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="642"/>
        <source>The model learns its positions: it has no rotary embedding</source>
        <translation>模型使用可学习的位置编码，没有旋转位置编码</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="667"/>
        <source>prior %1</source>
        <translation>先验值 %1</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="669"/>
        <source>none (dropless)</source>
        <translation>无（不丢弃 token）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="678"/>
        <source>The model has no experts</source>
        <translation>该模型没有专家</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="701"/>
        <source>internal error: %1</source>
        <translation>内部错误：%1</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="537"/>
        <source>Scenario %1: workload %2 (%3 layers, hidden %4, %5 heads) on cluster %6, %7 islands; objective %8</source>
        <translation>场景 %1：负载 %2（%3 层，隐藏维度 %4，%5 个注意力头），集群 %6，%7 个计算岛；目标 %8</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="546"/>
        <location filename="../main_window.cpp" line="1103"/>
        <source>cost</source>
        <translation>成本</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="546"/>
        <source>throughput</source>
        <translation>吞吐</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="722"/>
        <source>opened %1</source>
        <translation>已打开 %1</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="734"/>
        <source>searching...</source>
        <translation>搜索中...</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="742"/>
        <source>simulating plan %1 on the fabric...</source>
        <translation>正在网络上仿真方案 %1...</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="749"/>
        <source>stopping the simulation...</source>
        <translation>正在停止仿真...</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="753"/>
        <source>stopping the search...</source>
        <translation>正在停止搜索...</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="939"/>
        <source>saved %1</source>
        <translation>已保存 %1</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="948"/>
        <source>pinned plan %1 for comparison</source>
        <translation>已固定方案 %1 用于比较</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="989"/>
        <source>trace written to %1 (open it in Perfetto, ui.perfetto.dev)</source>
        <translation>跟踪文件已写入 %1（可在 Perfetto，ui.perfetto.dev 中打开）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="999"/>
        <source>searched %1 settings, scored %2 plans, %3 more pruned by a bound</source>
        <translation>已搜索 %1 组设置，评估 %2 个方案，另有 %3 个被上界剪枝</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1006"/>
        <source>; stopped early (%1): the best plans found until then</source>
        <translation>；提前停止（%1）：以下为停止前找到的最佳方案</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1014"/>
        <source>&lt;p&gt;&lt;b&gt;Rejected candidates, by constraint pass&lt;/b&gt;&lt;/p&gt;</source>
        <translation>&lt;p&gt;&lt;b&gt;按约束检查分类的被拒候选&lt;/b&gt;&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1081"/>
        <source> (none known)</source>
        <translation>（均未知）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1099"/>
        <source>tokens/s</source>
        <translation>tokens/s</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1050"/>
        <source>pool</source>
        <translation>资源池</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="141"/>
        <source>Save</source>
        <translation>保存</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="142"/>
        <source>Write the edited islands and workload into their files</source>
        <translation>把修改后的计算岛和训练负载写回各自的文件</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="147"/>
        <source>Islands per pipeline:</source>
        <translation>每条流水线的计算岛数：</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="395"/>
        <source>Cross-entropy kernel</source>
        <translation>交叉熵内核</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="398"/>
        <source>none: Megatron&apos;s loss on an fp32 copy of the logits; native: the same, jit-fused; te: Transformer Engine&apos;s, in the logits&apos; type, its gradient written over them</source>
        <translation>none：Megatron 的损失计算，使用 logits 的 fp32 副本；native：同上，JIT 融合；te：Transformer Engine 融合内核，按 logits 的数据类型计算，梯度原地写回</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="435"/>
        <source>Experts capped at a capacity of</source>
        <translation>专家容量上限系数</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="437"/>
        <source>Pad every expert to its capacity</source>
        <translation>将每个专家填充到其容量</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="587"/>
        <source>; the first layer dense</source>
        <translation>；第一层为稠密层</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="588"/>
        <source>; the first %1 layers dense</source>
        <translation>；前 %1 层为稠密层</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="598"/>
        <source>multi-token prediction modules: %1, on the last stage</source>
        <translation>多 token 预测（MTP）模块：%1 个，位于最后一个流水线阶段</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="885"/>
        <source>workload changed: search again for plans of the changed workload</source>
        <translation>训练负载已修改：请为修改后的负载重新搜索方案</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="938"/>
        <source>nothing to save: the files already say this</source>
        <translation>无需保存：文件内容已相同</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="960"/>
        <source>error: the islands or the workload were edited here; save them first (exports name the files a plan was made from)</source>
        <translation>error: 计算岛或训练负载已在此修改；请先保存（导出文件会注明方案所依据的文件）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1004"/>
        <source>; task-level pipelines span at most %1 islands</source>
        <translation>；任务级流水线最多跨越 %1 个计算岛</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1052"/>
        <source>task-level</source>
        <translation>任务级混合</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1063"/>
        <source>replica groups</source>
        <translation>跨芯片副本组</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1157"/>
        <source>&lt;p&gt;step %1 s, %2 tokens/s, MFU %3 %; %4 micro-batches of %5&lt;/p&gt;</source>
        <translation>&lt;p&gt;单步 %1 秒，%2 tokens/s，MFU %3 %；%4 个大小为 %5 的微批次&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1169"/>
        <source>&lt;p&gt;80% interval: step %1 - %2 s, %3 - %4 tokens/s, MFU %5 - %6 %; evidence: %7 (%8)&lt;/p&gt;</source>
        <translation>&lt;p&gt;80% 区间：步长 %1 - %2 s，%3 - %4 tokens/s，MFU %5 - %6 %；证据等级：%7（%8）&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1178"/>
        <source>&lt;p&gt;80% interval unknown: the profile of %1 states no evidence band; evidence: %2&lt;/p&gt;</source>
        <translation>&lt;p&gt;80% 区间未知：%1 的芯片画像未给出证据区间；证据等级：%2&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1183"/>
        <source>&lt;p&gt;&lt;b&gt;Memory tight&lt;/b&gt;: a stage&apos;s 80% memory interval reaches past what a process can allocate.&lt;/p&gt;</source>
        <translation>&lt;p&gt;&lt;b&gt;显存紧张&lt;/b&gt;：某一阶段显存的 80% 区间超出了进程可分配的显存。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1186"/>
        <source>&lt;p&gt;compute %1 s (bottleneck stage), bubble %2 s, optimizer %3 s&lt;br&gt;exposed communication: tensor-parallel %4 s, pipeline %5 s, cross-island %6 s, data-parallel %7 s&lt;/p&gt;</source>
        <translation>&lt;p&gt;计算 %1 秒（瓶颈阶段），流水线气泡 %2 秒，优化器 %3 秒&lt;br&gt;未被掩盖的通信：张量并行 %4 秒，流水线 %5 秒，跨计算岛 %6 秒，数据并行 %7 秒&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1196"/>
        <source>&lt;p&gt;Assumed (priors where a profile leaves a figure unknown):&lt;/p&gt;&lt;ul&gt;</source>
        <translation>&lt;p&gt;假设（芯片画像中未知的数值所用的先验值）：&lt;/p&gt;&lt;ul&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1204"/>
        <source>weights</source>
        <translation>权重</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1205"/>
        <source>gradients</source>
        <translation>梯度</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1248"/>
        <source>&lt;p&gt;one step of %1 ranks on the fabric (%2 flows, seed %3)&lt;/p&gt;</source>
        <translation>&lt;p&gt;在网络上仿真 %1 个 rank 的一个训练步（%2 条流，随机种子 %3）&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1255"/>
        <source>&lt;p&gt;step %1 s (analytic %2 s, %3 %)&lt;br&gt;%4 tokens/s, MFU %5 %&lt;/p&gt;</source>
        <translation>&lt;p&gt;单步 %1 秒（解析模型 %2 秒，%3 %）&lt;br&gt;%4 tokens/s，MFU %5 %&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1260"/>
        <source>&lt;p&gt;where the step goes (stage %1, dp %2, the last to finish):&lt;/p&gt;</source>
        <translation>&lt;p&gt;训练步时间构成（最后完成的阶段 %1，dp %2）：&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1271"/>
        <source>compute</source>
        <translation>计算</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1271"/>
        <source>tensor parallel</source>
        <translation>张量并行</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1272"/>
        <source>pipeline sends</source>
        <translation>流水线发送</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1272"/>
        <source>cross-island sends</source>
        <translation>跨计算岛发送</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1273"/>
        <source>data parallel (exposed)</source>
        <translation>数据并行（未掩盖）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="289"/>
        <location filename="../main_window.cpp" line="1274"/>
        <source>expert-parallel all-to-all</source>
        <translation>专家并行 all-to-all</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1274"/>
        <source>pipeline bubble</source>
        <translation>流水线气泡</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1275"/>
        <source>stragglers</source>
        <translation>慢节点</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1279"/>
        <source>&lt;p&gt;most loaded links (time at full rate during the step):&lt;/p&gt;</source>
        <translation>&lt;p&gt;负载最高的链路（训练步中满速传输的时间）：&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1280"/>
        <source>&lt;p&gt;none: no traffic left the chips&apos; nodes&lt;/p&gt;</source>
        <translation>&lt;p&gt;无：没有流量离开芯片所在节点&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1286"/>
        <source>&lt;p&gt;goodput %1 tokens/s (%2 % of the time is useful)</source>
        <translation>&lt;p&gt;有效吞吐 %1 tokens/s（%2 % 的时间有效）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1290"/>
        <source>&lt;br&gt;job MTBF %1 h; checkpoint every %2 steps (%3 h; Young %4 h, Daly %5 h)</source>
        <translation>&lt;br&gt;作业 MTBF %1 小时；每 %2 步保存一次检查点（%3 小时；Young %4 小时，Daly %5 小时）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1305"/>
        <source>simulated plan %1: step %2 s</source>
        <translation>已仿真方案 %1：单步 %2 秒</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1206"/>
        <source>optimizer</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1099"/>
        <source>Tokens/s</source>
        <translation>Tokens/s</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1101"/>
        <source>Chips used</source>
        <translation>所用芯片数</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1101"/>
        <source>chips</source>
        <translation>芯片数</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1103"/>
        <source>Cost per million tokens</source>
        <translation>每百万 tokens 成本</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1105"/>
        <source>Software stacks to run</source>
        <translation>需运行的软件栈</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1105"/>
        <source>stacks</source>
        <translation>软件栈</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1207"/>
        <source>activations</source>
        <translation>激活</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1208"/>
        <source>buffers</source>
        <translation>缓冲区</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1210"/>
        <source>usable</source>
        <translation>可用显存</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="1226"/>
        <source>Memory per chip of each stage (0, 1, ...), GiB</source>
        <translation>各阶段（0, 1, ...）每芯片显存，GiB</translation>
    </message>
</context>
<context>
    <name>hetplan::gui::PipelineDiagram</name>
    <message>
        <location filename="../pipeline_diagram.cpp" line="92"/>
        <source>stage %1, layers %2-%3</source>
        <translation>阶段 %1，第 %2-%3 层</translation>
    </message>
    <message>
        <location filename="../pipeline_diagram.cpp" line="96"/>
        <source>tp %1 x dp %2, ep %3</source>
        <translation>tp %1 x dp %2，ep %3</translation>
    </message>
    <message>
        <location filename="../pipeline_diagram.cpp" line="97"/>
        <source>tp %1 x dp %2</source>
        <translation>tp %1 x dp %2</translation>
    </message>
    <message>
        <location filename="../pipeline_diagram.cpp" line="98"/>
        <source>, does not fit</source>
        <translation>，显存放不下</translation>
    </message>
</context>
<context>
    <name>hetplan::gui::PlansModel</name>
    <message>
        <location filename="../models.cpp" line="204"/>
        <source>Rank</source>
        <translation>排名</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="205"/>
        <source>Mode</source>
        <translation>模式</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="206"/>
        <source>Plan</source>
        <translation>方案</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="207"/>
        <source>Chips</source>
        <translation>芯片数</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="208"/>
        <source>Step s</source>
        <translation>单步 秒</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="209"/>
        <source>Tokens/s</source>
        <translation>Tokens/s</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="210"/>
        <source>Tokens/s, 80% interval</source>
        <translation>Tokens/s，80% 区间</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="211"/>
        <source>Evidence</source>
        <translation>证据等级</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="212"/>
        <source>MFU %</source>
        <translation>MFU %</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="213"/>
        <source>Bubble %</source>
        <translation>气泡 %</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="214"/>
        <source>Comm s</source>
        <translation>通信 秒</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="215"/>
        <source>Cost/Mtok</source>
        <translation>成本/百万 tokens</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="222"/>
        <source>datasheet</source>
        <translation>规格书</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="223"/>
        <source>microbenchmarks</source>
        <translation>微基准</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="224"/>
        <source>probe</source>
        <translation>现场探测</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="225"/>
        <source>runs</source>
        <translation>真实训练</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="264"/>
        <source>single-island</source>
        <translation>单岛</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="265"/>
        <source>resource-pool</source>
        <translation>资源池</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="266"/>
        <source>task-level</source>
        <translation>任务级混合</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="271"/>
        <source>pool: </source>
        <translation>资源池：</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="281"/>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
</context>
<context>
    <name>hetplan::gui::SimulationRunner</name>
    <message>
        <location filename="../simulation_runner.cpp" line="41"/>
        <source>error: no scratch folder for the simulation&apos;s trace: %1</source>
        <translation>error: 无法为仿真的跟踪文件创建临时文件夹：%1</translation>
    </message>
</context>
<context>
    <name>hetplan::gui::StagesModel</name>
    <message>
        <location filename="../models.cpp" line="137"/>
        <source>Stage</source>
        <translation>阶段</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="138"/>
        <source>Island</source>
        <translation>计算岛</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="139"/>
        <source>Chip</source>
        <translation>芯片</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="140"/>
        <source>Layers</source>
        <translation>层</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="141"/>
        <source>tp</source>
        <translation>tp</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="142"/>
        <source>dp</source>
        <translation>dp</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="143"/>
        <source>fwd+bwd per micro-batch</source>
        <translation>每微批次前向+反向</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="144"/>
        <source>Memory peak / usable</source>
        <translation>显存峰值 / 可用</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="164"/>
        <source>%1 ms</source>
        <translation>%1 毫秒</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="166"/>
        <source>%1 GiB / %2 GiB</source>
        <translation>%1 GiB / %2 GiB</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="169"/>
        <source>  does not fit</source>
        <translation>  放不下</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="170"/>
        <source>  tight</source>
        <translation>  余量不足</translation>
    </message>
</context>
<context>
    <name>hetplan::gui::TimelineView</name>
    <message>
        <location filename="../timeline.cpp" line="105"/>
        <source>stage %1 dp %2</source>
        <translation>阶段 %1 dp %2</translation>
    </message>
    <message>
        <location filename="../timeline.cpp" line="107"/>
        <source>stage %1 gradient sync</source>
        <translation>阶段 %1 梯度同步</translation>
    </message>
    <message>
        <location filename="../timeline.cpp" line="276"/>
        <source>%1
starts at %2, lasts %3</source>
        <translation>%1
开始于 %2，持续 %3</translation>
    </message>
</context>
</TS>
