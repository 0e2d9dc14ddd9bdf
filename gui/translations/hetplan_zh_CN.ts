<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
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
        <location filename="../models.cpp" line="76"/>
        <source>: expected an integer from 1 to 100000, got &quot;%1&quot;</source>
        <translation>：应为 1 到 100000 之间的整数，实际为 &quot;%1&quot;</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="85"/>
        <source>: expected at most the island&apos;s %1 nodes, got &quot;%2&quot;</source>
        <translation>：不能超过该计算岛的 %1 个节点，实际为 &quot;%2&quot;</translation>
    </message>
</context>
<context>
    <name>hetplan::gui::MainWindow</name>
    <message>
        <location filename="../main_window.cpp" line="41"/>
        <source>hetplan</source>
        <translation>hetplan</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="44"/>
        <source>Plan</source>
        <translation>方案</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="45"/>
        <source>Open scenario...</source>
        <translation>打开场景...</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="46"/>
        <source>Search plans</source>
        <translation>搜索方案</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="47"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="50"/>
        <source>Open a scenario</source>
        <translation>打开场景</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="51"/>
        <source>Scenarios (*.yaml *.yml)</source>
        <translation>场景文件 (*.yaml *.yml)</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="89"/>
        <source>Three states and why</source>
        <translation>三种形态与原因</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="100"/>
        <source>Plan detail</source>
        <translation>方案详情</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="123"/>
        <source>islands changed: search again for plans on the changed cluster</source>
        <translation>计算岛已修改：请在修改后的集群上重新搜索方案</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="130"/>
        <source>searching: %1 of %2 settings, %3 plans scored, %4 pruned (%5)</source>
        <translation>搜索中：已尝试 %1 / %2 组设置，评估 %3 个方案，剪枝 %4 个（%5）</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="165"/>
        <source>internal error: %1</source>
        <translation>内部错误：%1</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="176"/>
        <source>Scenario %1: workload %2 (%3 layers, hidden %4, %5 heads) on cluster %6, %7 islands; objective %8</source>
        <translation>场景 %1：负载 %2（%3 层，隐藏维度 %4，%5 个注意力头），集群 %6，%7 个计算岛；目标 %8</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="185"/>
        <source>cost</source>
        <translation>成本</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="185"/>
        <source>throughput</source>
        <translation>吞吐</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="186"/>
        <source>opened %1</source>
        <translation>已打开 %1</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="196"/>
        <source>searching...</source>
        <translation>搜索中...</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="201"/>
        <source>stopping the search...</source>
        <translation>正在停止搜索...</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="212"/>
        <source>searched %1 settings, scored %2 plans, %3 more pruned by a bound</source>
        <translation>已搜索 %1 组设置，评估 %2 个方案，另有 %3 个被上界剪枝</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="217"/>
        <source>; stopped early (%1): the best plans found until then</source>
        <translation>；提前停止（%1）：以下为停止前找到的最佳方案</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="241"/>
        <source>tokens/s</source>
        <translation>tokens/s</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="247"/>
        <source>pool</source>
        <translation>资源池</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="249"/>
        <source>task-level</source>
        <translation>任务级混合</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="255"/>
        <source>Tokens/s: each island alone, the resource pool, one task-level job</source>
        <translation>Tokens/s：各计算岛单独训练、资源池混合、任务级混合单作业</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="296"/>
        <source>&lt;p&gt;step %1 s, %2 tokens/s, MFU %3 %; %4 micro-batches of %5&lt;/p&gt;</source>
        <translation>&lt;p&gt;单步 %1 秒，%2 tokens/s，MFU %3 %；%4 个大小为 %5 的微批次&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="302"/>
        <source>&lt;p&gt;compute %1 s (bottleneck stage), bubble %2 s, optimizer %3 s&lt;br&gt;exposed communication: tensor-parallel %4 s, pipeline %5 s, cross-island %6 s, data-parallel %7 s&lt;/p&gt;</source>
        <translation>&lt;p&gt;计算 %1 秒（瓶颈阶段），流水线气泡 %2 秒，优化器 %3 秒&lt;br&gt;未被掩盖的通信：张量并行 %4 秒，流水线 %5 秒，跨计算岛 %6 秒，数据并行 %7 秒&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="309"/>
        <source>&lt;p&gt;Assumed (priors where a profile leaves a figure unknown):&lt;/p&gt;&lt;ul&gt;</source>
        <translation>&lt;p&gt;假设（芯片画像中未知的数值所用的先验值）：&lt;/p&gt;&lt;ul&gt;</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="317"/>
        <source>weights</source>
        <translation>权重</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="318"/>
        <source>gradients</source>
        <translation>梯度</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="319"/>
        <source>optimizer</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="320"/>
        <source>activations</source>
        <translation>激活</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="321"/>
        <source>buffers</source>
        <translation>缓冲区</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="323"/>
        <source>usable</source>
        <translation>可用显存</translation>
    </message>
    <message>
        <location filename="../main_window.cpp" line="342"/>
        <source>Memory per chip of each stage (0, 1, ...), GiB</source>
        <translation>各阶段（0, 1, ...）每芯片显存，GiB</translation>
    </message>
</context>
<context>
    <name>hetplan::gui::PlansModel</name>
    <message>
        <location filename="../models.cpp" line="186"/>
        <source>Rank</source>
        <translation>排名</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="187"/>
        <source>Mode</source>
        <translation>模式</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="188"/>
        <source>Plan</source>
        <translation>方案</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="189"/>
        <source>Chips</source>
        <translation>芯片数</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="190"/>
        <source>Step s</source>
        <translation>单步 秒</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="191"/>
        <source>Tokens/s</source>
        <translation>Tokens/s</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="192"/>
        <source>MFU %</source>
        <translation>MFU %</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="193"/>
        <source>Bubble %</source>
        <translation>气泡 %</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="194"/>
        <source>Comm s</source>
        <translation>通信 秒</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="195"/>
        <source>Cost/Mtok</source>
        <translation>成本/百万 tokens</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="229"/>
        <source>single-island</source>
        <translation>单岛</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="230"/>
        <source>resource-pool</source>
        <translation>资源池</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="231"/>
        <source>task-level</source>
        <translation>任务级混合</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="236"/>
        <source>pool: </source>
        <translation>资源池：</translation>
    </message>
</context>
<context>
    <name>hetplan::gui::StagesModel</name>
    <message>
        <location filename="../models.cpp" line="119"/>
        <source>Stage</source>
        <translation>阶段</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="120"/>
        <source>Island</source>
        <translation>计算岛</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="121"/>
        <source>Chip</source>
        <translation>芯片</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="122"/>
        <source>Layers</source>
        <translation>层</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="123"/>
        <source>tp</source>
        <translation>tp</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="124"/>
        <source>dp</source>
        <translation>dp</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="125"/>
        <source>fwd+bwd per micro-batch</source>
        <translation>每微批次前向+反向</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="126"/>
        <source>Memory peak / usable</source>
        <translation>显存峰值 / 可用</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="146"/>
        <source>%1 ms</source>
        <translation>%1 毫秒</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="148"/>
        <source>%1 GiB / %2 GiB</source>
        <translation>%1 GiB / %2 GiB</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="151"/>
        <source>  does not fit</source>
        <translation>  放不下</translation>
    </message>
    <message>
        <location filename="../models.cpp" line="152"/>
        <source>  tight</source>
        <translation>  余量不足</translation>
    </message>
</context>
</TS>
